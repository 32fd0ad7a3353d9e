#include "report/document_html.h"

#include "util/html_escape.h"

namespace loadwatch::report {

namespace {

void append_lines(std::string& h, const std::vector<std::string>& lines) {
  bool in_list = false;
  for (const std::string& line : lines) {
    bool item = line.rfind("- ", 0) == 0;
    if (item && !in_list) h += "<ul>\n";
    if (!item && in_list) h += "</ul>\n";
    in_list = item;
    h += item ? "<li>" + html_escape(line.substr(2)) + "</li>\n"
              : "<p>" + html_escape(line) + "</p>\n";
  }
  if (in_list) h += "</ul>\n";
}

void table_html(std::string& h, const analysis::Table& t) {
  h += "<table class=\"doc\"";
  if (!t.id.empty()) h += " id=\"" + html_escape(t.id) + "\"";
  h += ">\n<tr>";
  for (const std::string& cell : t.header) h += "<th>" + html_escape(cell) + "</th>";
  h += "</tr>\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    h += t.marked_row == r ? "<tr class=\"" + html_escape(t.mark) + "\">" : std::string("<tr>");
    for (std::size_t i = 0; i < row.size(); ++i) {
      bool left = i < t.numeric.size() && !t.numeric[i];
      h += left ? "<td class=\"text\">" : "<td>";
      h += html_escape(row[i]) + "</td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n";
}

}  // namespace

const char* report_page_css() {
  return "body{font-family:sans-serif;margin:10px;color:#222}"
         "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
         "padding:3px 6px;text-align:right}th{background:#f3f3f3}"
         "tr.knee td{background:#fde2e2;font-weight:bold}"
         "td:first-child,td.text{text-align:left}.verdict{font-weight:bold;font-size:16px}"
         ".fail{color:#c00}.pass{color:#080}pre{background:#f7f7f7;padding:6px;overflow:auto}"
         "h3{margin:14px 0 6px}table.doc{margin-bottom:8px}";
}

std::string lines_html(const std::vector<std::string>& lines) {
  std::string h;
  append_lines(h, lines);
  return h;
}

std::string section_html(const analysis::Section& s) {
  std::string h;
  if (!s.title.empty()) h += "<h3>" + html_escape(s.title) + "</h3>\n";
  append_lines(h, s.lines);
  for (const analysis::Table& t : s.tables) table_html(h, t);
  append_lines(h, s.notes);
  return h;
}

std::string document_html(const analysis::Document& doc, bool with_title) {
  std::string h;
  if (with_title && !doc.title.empty()) h += "<h2>" + html_escape(doc.title) + "</h2>\n";
  if (with_title) append_lines(h, doc.lines);
  for (const analysis::Section& s : doc.sections) h += section_html(s);
  return h;
}

}  // namespace loadwatch::report
