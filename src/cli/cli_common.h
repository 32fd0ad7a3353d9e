#pragma once
// What the analysis subcommands share: parsing where a usage error is exit code 2.

#include <optional>

#include "cli/command_line.h"
#include "cli/usage_error.h"

namespace loadwatch::analysis {

/// Parses argv; returns an exit code when the command should stop (0 after --help, 2 on a bad
/// command line), nullopt to go on.
inline std::optional<int> parse_cli(CommandLine& app, int argc, char** argv) {
  if (auto code = app.parse(argc, argv)) return *code == 0 ? 0 : kExitBadInput;
  return std::nullopt;
}

}  // namespace loadwatch::analysis
