#pragma once
// A report document (titles, sentences, tables of formatted figures: analysis/document.h) as
// HTML, every text escaped, so a page shows the same sentences and tables as the text and
// markdown renders, written once.

#include <string>

#include "analysis/document.h"

namespace loadwatch::report {

/// The document's sections as HTML: a heading per section (h3), its sentences (a line starting
/// "- " is a list item), its tables, its notes. The document's own title and lines come first
/// when `with_title`.
std::string document_html(const analysis::Document& doc, bool with_title = true);
/// One section: its heading (h3), sentences, tables and notes.
std::string section_html(const analysis::Section& section);
/// The report pages' styles: tables, the marked row (class "knee"), the verdict.
const char* report_page_css();
/// Sentences as paragraphs; a run of lines starting "- " as one list.
std::string lines_html(const std::vector<std::string>& lines);

}  // namespace loadwatch::report
