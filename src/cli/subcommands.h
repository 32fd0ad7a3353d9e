#pragma once
// The tools that share the daemon's binary (`loadwatch NAME ...`): one table, so the daemon's
// main stays one line and `--help` can list them.

#include <string_view>
#include <vector>

namespace loadwatch {

struct Subcommand {
  const char* name;
  const char* summary;  // one line, for --help and the man page
  /// argv[0] is the subcommand's name; returns the process exit code.
  int (*run)(int argc, char** argv);
};

/// Every subcommand, in the order --help lists them.
const std::vector<Subcommand>& subcommands();

/// The subcommand called `name`, or nullptr.
const Subcommand* find_subcommand(std::string_view name);

}  // namespace loadwatch
