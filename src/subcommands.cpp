#include "subcommands.h"

#include "runs/cli_run.h"

namespace loadwatch {

const std::vector<Subcommand>& subcommands() {
  // One line per subcommand; each lives in the folder of its capability.
  static const std::vector<Subcommand> table = {
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
