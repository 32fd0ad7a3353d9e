#pragma once
// The run report as ONE self-contained HTML file: uPlot, its styles and the data inlined, no
// request to any origin, so it opens from disk (file://) as a CI artifact.

#include <optional>
#include <string>

#include "analysis/document.h"

namespace loadwatch::report {

struct HtmlComparison {
  analysis::Document document;  // analysis::comparison_document: its tables become HTML tables
  bool regressed = false;
  std::string base_label;
};

/// `report_json`: render_report_json; `timeline_json`: timeline_json (may be "{}").
std::string render_report_html(const std::string& report_json, const std::string& timeline_json,
                               const std::optional<HtmlComparison>& comparison = std::nullopt);

}  // namespace loadwatch::report
