#include "cli/subcommands.h"

#include "cli/cli.h"
#include "cli/cli_report.h"
#include "cli/cli_run.h"

namespace loadwatch {

const std::vector<Subcommand>& subcommands() {
  // One line per subcommand; each lives in the folder of its capability.
  static const std::vector<Subcommand> table = {
      {"capacity", "knee, USL fit and table from a CSV of step results", analysis::run_capacity},
      {"compare", "a run against a baseline, for CI (exit 1 on a regression)",
       analysis::run_compare},
      {"report", "a run's capacity report from a loadwatch or a Prometheus server (table, html...)",
       report::run_report_cli},
      {"run", "start, phase, stop and list test runs; run a load generator inside a run", run_cli},
  };
  return table;
}

const Subcommand* find_subcommand(std::string_view name) {
  for (const Subcommand& s : subcommands()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace loadwatch
