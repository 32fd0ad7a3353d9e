// Markdown layout (GitHub-flavoured tables), for a pull request comment or a CI summary page.
#include <sstream>

#include "analysis/document.h"
#include "util/printable.h"

namespace loadwatch::analysis {

namespace {

/// Text from the data (names, reasons) as markdown that shows it and means nothing else: no
/// HTML, code span, emphasis, link or table cell boundary; one line, no terminal controls.
std::string text(const std::string& s) {
  std::string out;
  for (char c : printable_line(s)) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '\\' || c == '`' || c == '|' || c == '*' || c == '_' || c == '[' || c == ']') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

/// A sentence: "- " (a list item, our own markup) stays, the rest is text.
std::string line(const std::string& l) {
  if (l.rfind("- ", 0) == 0) return "- " + text(l.substr(2));
  return text(l);
}

void write_table(std::ostringstream& out, const Table& t) {
  out << '|';
  for (const std::string& h : t.header) out << ' ' << text(h) << " |";
  out << "\n|";
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    out << (c < t.numeric.size() && t.numeric[c] ? " ---: |" : " --- |");
  }
  out << '\n';
  for (const auto& row : t.rows) {
    out << '|';
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      out << ' ' << (c < row.size() ? text(row[c]) : "") << " |";
    }
    out << '\n';
  }
}

void write_lines(std::ostringstream& out, const std::vector<std::string>& lines) {
  bool in_list = false;
  for (const std::string& l : lines) {
    bool item = l.rfind("- ", 0) == 0;
    if (!item && in_list) out << '\n';
    out << line(l) << (item ? "\n" : "\n\n");
    in_list = item;
  }
  if (in_list) out << '\n';
}

}  // namespace

std::string render_markdown(const Document& doc) {
  std::ostringstream out;
  out << "# " << text(doc.title) << "\n\n";
  write_lines(out, doc.lines);
  for (const Section& s : doc.sections) {
    out << "## " << text(s.title) << "\n\n";
    write_lines(out, s.lines);
    for (const Table& t : s.tables) {
      write_table(out, t);
      out << '\n';
    }
    write_lines(out, s.notes);
  }
  std::string text = out.str();
  while (text.size() >= 2 && text.substr(text.size() - 2) == "\n\n") text.pop_back();
  return text;
}

}  // namespace loadwatch::analysis
