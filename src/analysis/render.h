#pragma once
// A capacity report or a comparison in one of the output formats.

#include <optional>
#include <string>
#include <string_view>

#include "analysis/capacity_report.h"
#include "analysis/compare.h"
#include "analysis/document.h"

namespace loadwatch::analysis {

enum class Format { table, markdown, json };
std::optional<Format> parse_format(std::string_view name);

/// The layout of a report: phases, targets, host, then knee, USL fit and bottleneck.
Document capacity_document(const CapacityReport& report);
/// The layout of a comparison: one row per phase and rule, with the verdict.
Document comparison_document(const Comparison& c, const std::string& base_label,
                             const std::string& current_label);

std::string render_report(const CapacityReport& report, Format format);
std::string render_comparison(const Comparison& c, Format format, const std::string& base_label,
                              const std::string& current_label);

std::string render_report_json(const CapacityReport& report);
std::string render_comparison_json(const Comparison& c, const std::string& base_label,
                                   const std::string& current_label);

}  // namespace loadwatch::analysis
