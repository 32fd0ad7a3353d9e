#pragma once
// A report laid out once (titles, sentences, tables of formatted figures) and then written as
// plain text or markdown; an HTML writer can take the same layout.

#include <optional>
#include <string>
#include <vector>

namespace loadwatch::analysis {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // per column: right-aligned
  std::vector<std::vector<std::string>> rows;
  /// For HTML: the table's id, and a row to mark with a class (the knee's phase); the text and
  /// markdown renders say the same in a sentence.
  std::string id;
  std::optional<std::size_t> marked_row;
  std::string mark;

  /// Drops the columns (from `first_optional` on) in which no row has a figure.
  void drop_empty_columns(std::size_t first_optional);
  /// Drops column `a` when every row has the same text there as in column `b` (a phase named
  /// by its user count, as a CSV's are).
  void drop_duplicate_column(std::size_t a, std::size_t b);
};

struct Section {
  std::string title;
  std::vector<std::string> lines;  // sentences; a line starting "- " is a list item
  std::vector<Table> tables;
  std::vector<std::string> notes;  // after the tables
};

struct Document {
  std::string title;
  std::vector<std::string> lines;
  std::vector<Section> sections;
};

std::string render_text(const Document& doc);
std::string render_markdown(const Document& doc);

}  // namespace loadwatch::analysis
