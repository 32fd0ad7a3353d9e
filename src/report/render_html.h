#pragma once
// The run report as ONE self-contained HTML file: uPlot, its styles and the data inlined, no
// request to any origin, so it opens from disk (file://) as a CI artifact.

#include <optional>
#include <string>

#include "analysis/capacity_report.h"
#include "analysis/document.h"

namespace loadwatch::report {

struct HtmlComparison {
  analysis::Document document;  // analysis::comparison_document: its tables become HTML tables
  bool regressed = false;
  std::string base_label;
};

/// `report`: what the page writes out; `report_json`: the same report as render_report_json
/// gives it, for the charts; `timeline_json`: timeline_json (may be "{}").
std::string render_report_html(const analysis::CapacityReport& report,
                               const std::string& report_json, const std::string& timeline_json,
                               const std::optional<HtmlComparison>& comparison = std::nullopt);

}  // namespace loadwatch::report
