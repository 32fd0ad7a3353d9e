#pragma once
// What the analysis subcommands share: CLI11 parsing where a usage error is exit code 2.

#include <CLI/CLI.hpp>
#include <optional>

#include "cli/usage_error.h"

namespace loadwatch::analysis {

/// Parses argv; returns an exit code when the command should stop (0 after --help, 2 on a bad
/// command line), nullopt to go on.
inline std::optional<int> parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    app.exit(e);
    return kExitBadInput;
  }
  return std::nullopt;
}

}  // namespace loadwatch::analysis
