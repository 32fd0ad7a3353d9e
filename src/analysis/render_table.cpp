// Plain-text layout: aligned columns, for a terminal or a CI log.
#include <algorithm>
#include <sstream>

#include "analysis/document.h"
#include "analysis/format_figures.h"
#include "util/printable.h"

namespace loadwatch::analysis {

namespace {

/// Display width: counts UTF-8 code points, not bytes (µ, ², α).
std::size_t width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

/// The table with every cell on one line, without controls (widths are measured on what is
/// written).
Table printable(const Table& t) {
  Table p = t;
  for (auto& h : p.header) h = printable_line(h);
  for (auto& row : p.rows) {
    for (auto& c : row) c = printable_line(c);
  }
  return p;
}

void write_table(std::ostringstream& out, const Table& table) {
  const Table t = printable(table);
  std::vector<std::size_t> widths(t.header.size(), 0);
  for (std::size_t c = 0; c < t.header.size(); ++c) widths[c] = width(t.header[c]);
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], width(row[c]));
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(widths[c] - width(cell), ' ');
      bool right = c < t.numeric.size() && t.numeric[c];
      if (c > 0) s += "  ";
      s += right ? pad + cell : cell + pad;
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  line(t.header);
  std::vector<std::string> rule;
  for (std::size_t w : widths) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& row : t.rows) line(row);
}

}  // namespace

void Table::drop_empty_columns(std::size_t first_optional) {
  for (std::size_t c = header.size(); c-- > first_optional;) {
    bool any = std::any_of(rows.begin(), rows.end(), [&](const std::vector<std::string>& r) {
      return c < r.size() && r[c] != kNoFigure && !r[c].empty();
    });
    if (any) continue;
    header.erase(header.begin() + static_cast<std::ptrdiff_t>(c));
    if (c < numeric.size()) numeric.erase(numeric.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& r : rows) {
      if (c < r.size()) r.erase(r.begin() + static_cast<std::ptrdiff_t>(c));
    }
  }
}

void Table::drop_duplicate_column(std::size_t a, std::size_t b) {
  if (a >= header.size() || b >= header.size() || rows.empty()) return;
  for (const auto& r : rows) {
    if (a >= r.size() || b >= r.size() || r[a] != r[b]) return;
  }
  header.erase(header.begin() + static_cast<std::ptrdiff_t>(a));
  if (a < numeric.size()) numeric.erase(numeric.begin() + static_cast<std::ptrdiff_t>(a));
  for (auto& r : rows) r.erase(r.begin() + static_cast<std::ptrdiff_t>(a));
}

std::string render_text(const Document& doc) {
  std::ostringstream out;
  out << doc.title << '\n' << std::string(width(doc.title), '=') << '\n';
  for (const std::string& l : doc.lines) out << printable_line(l) << '\n';
  for (const Section& s : doc.sections) {
    out << '\n' << s.title << '\n' << std::string(width(s.title), '-') << '\n';
    for (const std::string& l : s.lines) out << printable_line(l) << '\n';
    for (std::size_t i = 0; i < s.tables.size(); ++i) {
      if (i > 0 || !s.lines.empty()) out << '\n';
      write_table(out, s.tables[i]);
    }
    for (const std::string& l : s.notes) out << printable_line(l) << '\n';
  }
  return out.str();
}

}  // namespace loadwatch::analysis
