// loadwatch compare BASE CUR: the baseline gate for CI.
#include <fstream>
#include <iostream>

#include "analysis/compare.h"
#include "analysis/junit.h"
#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/client_flags.h"
#include "cli/url_report_loader.h"

namespace loadwatch::analysis {

int run_compare(int argc, char** argv) {
  CommandLine app{
      "Compare a run with a baseline, phase by phase (matched by user count, else by name).\n"
      "BASE and CUR are saved reports (capacity --format json, or a capacity CSV), or run\n"
      "ids of the loadwatch given with --url.\n"
      "Exit 0 within the limits, 1 on a regression, 2 on bad input. A difference within the\n"
      "two figures' combined uncertainty is \"within noise\" (exit 0); a rule whose margin is\n"
      "smaller than that uncertainty is INCONCLUSIVE (exit 0, or 3 with --fail-inconclusive).\n"
      "Rules: METRIC=CHANGE with METRIC rps, p50, p95, p99, error_ratio and CHANGE like +20%,\n"
      "-10%, -50/s (rps, absolute), +0.5pp (error_ratio), +30ms. Default: --max p95=+20%.",
      "loadwatch compare"};
  std::string base_ref, current_ref, junit_file, format_name = "table";
  std::vector<std::string> max_specs, min_specs;
  app.option("BASE", base_ref, "Baseline report").required();
  app.option("CUR", current_ref, "Current report").required();
  // One rule per flag, so `--max p95=+20% base.json cur.json` never reads a file as a rule.
  app.option("--max", max_specs, "Upper limit, e.g. p95=+20% (repeatable)")
      .one_value_each()
      .take_all();
  app.option("--min", min_specs, "Lower limit, e.g. rps=-10% (repeatable)")
      .one_value_each()
      .take_all();
  ClientFlags flags;
  add_client_flags(app, flags, "loadwatch URL whose run ids BASE and CUR may be");
  app.option("--junit", junit_file, "Write the verdicts as JUnit XML to this file");
  app.option("--format", format_name, "table, markdown or json").capture_default();
  bool fail_inconclusive = false;
  app.flag("--fail-inconclusive", fail_inconclusive,
           "Exit 3 when a rule is inconclusive (the figures too uncertain for its margin)");
  if (auto code = parse_cli(app, argc, argv)) return *code;

  std::optional<Format> format = parse_format(format_name);
  if (!format) return usage_error("--format: expected table, markdown or json");
  std::vector<Rule> rules;
  try {
    rules = rules_or_default(max_specs, min_specs);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  for (const Rule& r : rules) {
    if (!r.warning.empty()) std::cerr << "loadwatch compare: warning: " << r.warning << "\n";
  }

  RunClientOptions client;
  try {
    auto daemons = resolve_daemons(flags);
    if (daemons.size() > 1) return usage_error("--url: compare reads one loadwatch");
    if (!daemons.empty()) client = daemons[0].options;
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  CapacityReport base, current;
  auto loaders = report::report_loaders(client);
  try {
    base = load_report(base_ref, loaders);
    current = load_report(current_ref, loaders);
  } catch (const ReportLoadError& e) {
    return usage_error(e.what());
  }
  Comparison comparison = compare_reports(base, current, rules);
  std::cout << render_comparison(comparison, *format, base_ref, current_ref) << std::flush;
  if (!junit_file.empty()) {
    std::ofstream out(junit_file, std::ios::trunc);
    out << junit_xml(comparison, "loadwatch compare " + base_ref + " " + current_ref);
    out.close();
    if (!out) return usage_error(junit_file + ": cannot write the JUnit file");
  }
  return comparison.exit_code(fail_inconclusive);
}

}  // namespace loadwatch::analysis
