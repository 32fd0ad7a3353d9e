#include "report/render_html.h"

#include "analysis/render.h"
#include "report/document_html.h"
#include "util/html_escape.h"
#include "util/static_files.h"

namespace loadwatch::report {

namespace {

std::string embedded(const char* name) {
  auto f = find_static_file(name);
  return f ? std::string(*f) : std::string();
}

/// JSON safe inside <script>: no "</script", "<!--" or "-->" can end the element early or
/// switch the parser into its double-escaped state. JSON has < > & only inside strings, where
/// \u003c, \u003e and \u0026 parse back to the same characters.
std::string json_script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// Our own script files inside <script>: no "</" can close the element early.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// "Run report: NAME": the run's name, else its id, else where the phases came from.
std::string page_title(const analysis::CapacityReport& r) {
  std::string what = r.input;
  if (r.run) what = r.run->name.empty() ? r.run->id : r.run->name;
  return "Run report: " + what;
}

}  // namespace

std::string render_report_html(const analysis::CapacityReport& report,
                               const std::string& report_json, const std::string& timeline_json,
                               const std::optional<HtmlComparison>& comparison) {
  std::string h;
  h.reserve(80000 + report_json.size() + timeline_json.size());
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       // Nothing may be fetched: the file must work offline and never call home.
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
       "<title>loadwatch run report</title>\n<style>\n";
  h += embedded("uPlot.min.css");
  h += "\n";
  h += report_page_css();
  h += "\n</style></head><body>\n";
  // Every sentence and table is the capacity document's, as the text and markdown reports
  // write them; the script below only draws the charts.
  analysis::Document doc = analysis::capacity_document(report);
  h += "<h1 id=\"title\">" + html_escape(page_title(report)) + "</h1>\n";
  h += lines_html(doc.lines);
  h += "<div id=\"summary\">";
  for (const auto& s : doc.sections) {
    if (s.tables.empty()) h += section_html(s);  // the knee, the fit, what saturated first
  }
  h += "</div>\n";
  if (comparison) {
    h += "<h2>Compared with " + html_escape(comparison->base_label) + "</h2>\n";
    h += std::string("<p id=\"verdict\" class=\"verdict ") +
         (comparison->regressed ? "fail" : "pass") + "\">" +
         (comparison->regressed ? "REGRESSION" : "within limits") + "</p>\n" +
         "<div id=\"comparison\">" + document_html(comparison->document, false) + "</div>\n";
  }
  h += "<h2>Scaling</h2>\n<div id=\"scaling\"></div>\n<div id=\"tables\">";
  for (const auto& s : doc.sections) {
    if (!s.tables.empty()) h += section_html(s);
  }
  h += "</div>\n"
       "<section id=\"timeline-section\"><h2>Time series</h2>\n<div id=\"timeline\"></div>"
       "</section>\n"
       "<p style=\"font-size:12px;color:#777\">loadwatch run report; charts by uPlot (MIT).</p>\n";
  h += "<script type=\"application/json\" id=\"report-data\">{\"report\":";
  h += json_script_safe(report_json.empty() ? std::string("{}") : report_json);
  h += ",\"timeline\":";
  h += json_script_safe(timeline_json.empty() ? std::string("{}") : timeline_json);
  h += "}</script>\n<script>";
  h += script_safe(embedded("uPlot.iife.min.js"));
  h += "</script>\n<script>";
  h += script_safe(embedded("report_page.js"));
  h += "</script>\n</body></html>\n";
  return h;
}

}  // namespace loadwatch::report
