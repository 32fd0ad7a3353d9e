#pragma once
// What the analysis subcommands share: CLI11 parsing where a usage error is exit code 2.

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

namespace loadwatch::analysis {

inline constexpr int kExitBadInput = 2;

/// Prints `message` to stderr and returns kExitBadInput.
inline int usage_error(const std::string& message) {
  std::cerr << "loadwatch: " << message << "\n";
  return kExitBadInput;
}

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
