// A comparison laid out for people: one row per phase and rule, then the verdict.
#include "analysis/compare.h"
#include "analysis/format_figures.h"
#include "analysis/render.h"

namespace loadwatch::analysis {

Document comparison_document(const Comparison& c, const std::string& base_label,
                             const std::string& current_label) {
  Document doc;
  doc.title = "Baseline comparison";
  doc.lines.push_back("- Baseline: " + base_label);
  doc.lines.push_back("- Current:  " + current_label);
  Section s;
  s.title = "Phases";
  Table t;
  t.header = {"Phase",   "Users",  "Matched by", "Rule", "Baseline",
              "Current", "Change", "Limit",      "±",    "Verdict"};
  t.numeric = {false, true, false, false, true, true, true, true, true, false};
  for (const PhaseComparison& p : c.phases) {
    std::string users = p.users ? std::to_string(*p.users) : kNoFigure;
    if (!p.current_phase) {
      t.rows.push_back({p.base_phase, users, kNoFigure, "phase present", kNoFigure, kNoFigure,
                        kNoFigure, kNoFigure, kNoFigure, "MISSING"});
      continue;
    }
    std::string matched = p.matched_by;
    if (*p.current_phase != p.base_phase) matched += " (" + *p.current_phase + ")";
    for (const RuleResult& r : p.results) {
      Metric m = r.rule.metric;
      auto fmt = [&](double v) { return format_metric(m, v); };
      std::string change = r.base && r.current ? fmt_change(*r.base, *r.current) : kNoFigure;
      t.rows.push_back({p.base_phase, users, matched, r.rule.describe(), fmt_opt(r.base, fmt),
                        fmt_opt(r.current, fmt), change, fmt_opt(r.limit, fmt),
                        fmt_opt(r.uncertainty, fmt), verdict_name(r.verdict)});
      if (r.verdict == Verdict::inconclusive || r.verdict == Verdict::within_noise) {
        s.notes.push_back("- " + fmt_phase(p.base_phase, p.users) + ": " + r.message + ".");
      }
    }
  }
  t.drop_duplicate_column(0, 1);
  t.drop_empty_columns(4);
  s.tables.push_back(std::move(t));
  for (const std::string& name : c.unmatched_current) {
    s.notes.push_back("- Phase " + name +
                      " of the current run has no baseline phase (not judged).");
  }
  for (const std::string& name : c.idle_phases) {
    s.notes.push_back("- Phase " + name +
                      " runs at 0 users (a drain or an idle step): not judged.");
  }
  for (const std::string& problem : c.problems) s.notes.push_back("- Bad input: " + problem + ".");
  doc.sections.push_back(std::move(s));

  Section v;
  v.title = "Verdict";
  int code = c.exit_code();
  v.lines.push_back(
      code == 1   ? "FAIL: regression (exit 1)."
      : code == 2 ? "FAIL: the comparison is incomplete, see MISSING / NO DATA "
                    "(exit 2)."
      : c.inconclusive()
          ? "PASS with INCONCLUSIVE rules: the figures are too uncertain to judge "
            "them (exit 0; 3 with --fail-inconclusive)."
          : "PASS: every phase is within the limits (within noise counts as within).");
  doc.sections.push_back(std::move(v));
  return doc;
}

}  // namespace loadwatch::analysis
