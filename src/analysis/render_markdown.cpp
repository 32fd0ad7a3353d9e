// Markdown layout (GitHub-flavoured tables), for a pull request comment or a CI summary page.
#include <sstream>

#include "analysis/document.h"

namespace loadwatch::analysis {

namespace {

std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

void write_table(std::ostringstream& out, const Table& t) {
  out << '|';
  for (const std::string& h : t.header) out << ' ' << cell(h) << " |";
  out << "\n|";
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    out << (c < t.numeric.size() && t.numeric[c] ? " ---: |" : " --- |");
  }
  out << '\n';
  for (const auto& row : t.rows) {
    out << '|';
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      out << ' ' << (c < row.size() ? cell(row[c]) : "") << " |";
    }
    out << '\n';
  }
}

void write_lines(std::ostringstream& out, const std::vector<std::string>& lines) {
  bool in_list = false;
  for (const std::string& l : lines) {
    bool item = l.rfind("- ", 0) == 0;
    if (!item && in_list) out << '\n';
    out << l << (item ? "\n" : "\n\n");
    in_list = item;
  }
  if (in_list) out << '\n';
}

}  // namespace

std::string render_markdown(const Document& doc) {
  std::ostringstream out;
  out << "# " << doc.title << "\n\n";
  write_lines(out, doc.lines);
  for (const Section& s : doc.sections) {
    out << "## " << s.title << "\n\n";
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
