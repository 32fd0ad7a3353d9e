// JSON output: the report exactly as docs/report.md describes it (what `compare` reads back).
#include <nlohmann/json.hpp>

#include "analysis/render.h"

namespace loadwatch::analysis {

std::optional<Format> parse_format(std::string_view name) {
  if (name == "table") return Format::table;
  if (name == "markdown") return Format::markdown;
  if (name == "json") return Format::json;
  return std::nullopt;
}

std::string render_report_json(const CapacityReport& report) {
  return nlohmann::ordered_json(report).dump(2) + "\n";
}

std::string render_comparison_json(const Comparison& c, const std::string& base_label,
                                   const std::string& current_label) {
  using json = nlohmann::ordered_json;
  json phases = json::array();
  for (const PhaseComparison& p : c.phases) {
    json jp = {{"base_phase", p.base_phase}};
    if (p.users) jp["users"] = *p.users;
    if (p.current_phase) {
      jp["current_phase"] = *p.current_phase;
      jp["matched_by"] = p.matched_by;
    }
    json results = json::array();
    for (const RuleResult& r : p.results) {
      json jr = {{"rule", r.rule.describe()},
                 {"metric", metric_name(r.rule.metric)},
                 {"verdict", verdict_name(r.verdict)},
                 {"message", r.message}};
      if (r.base) jr["base"] = *r.base;
      if (r.current) jr["current"] = *r.current;
      if (r.limit) jr["limit"] = *r.limit;
      if (r.uncertainty) jr["uncertainty"] = *r.uncertainty;
      results.push_back(std::move(jr));
    }
    jp["results"] = std::move(results);
    phases.push_back(std::move(jp));
  }
  json j = {{"base", base_label},           {"current", current_label},
            {"phases", std::move(phases)},  {"unmatched_current_phases", c.unmatched_current},
            {"idle_phases", c.idle_phases}, {"problems", c.problems},
            {"regressed", c.regressed()},   {"inconclusive", c.inconclusive()},
            {"exit_code", c.exit_code()}};
  return j.dump(2) + "\n";
}

std::string render_report(const CapacityReport& report, Format format) {
  switch (format) {
    case Format::table:
      return render_text(capacity_document(report));
    case Format::markdown:
      return render_markdown(capacity_document(report));
    case Format::json:
      return render_report_json(report);
  }
  return {};
}

std::string render_comparison(const Comparison& c, Format format, const std::string& base_label,
                              const std::string& current_label) {
  switch (format) {
    case Format::table:
      return render_text(comparison_document(c, base_label, current_label));
    case Format::markdown:
      return render_markdown(comparison_document(c, base_label, current_label));
    case Format::json:
      return render_comparison_json(c, base_label, current_label);
  }
  return {};
}

}  // namespace loadwatch::analysis
