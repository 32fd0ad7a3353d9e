#include "report/render_fleet_html.h"

#include "report/document_html.h"
#include "util/html_escape.h"

namespace loadwatch::report {

std::string render_fleet_html(const analysis::FleetReport& report) {
  analysis::Document doc = analysis::fleet_document(report);
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing may run or be fetched: the file is text and tables.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n<title>";
  h += html_escape(doc.title);
  h += "</title>\n<style>\n";
  h += report_page_css();
  h += "\n</style></head><body>\n<h1 id=\"title\">" + html_escape(doc.title) + "</h1>\n";
  // The document's first line is the verdict; warnings follow it as a list.
  std::vector<std::string> lines = doc.lines;
  if (!lines.empty()) {
    h += "<p id=\"verdict\" class=\"verdict\">" + html_escape(lines.front()) + "</p>\n";
    lines.erase(lines.begin());
  }
  h += "<div id=\"warnings\">" + lines_html(lines) + "</div>\n";
  h += "<div id=\"sections\">" + document_html(doc, false) + "</div>\n";
  h += "<p style=\"font-size:12px;color:#777\">loadwatch report across hosts.</p>\n"
       "</body></html>\n";
  return h;
}

}  // namespace loadwatch::report
