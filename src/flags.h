#pragma once
// Command-line parsing (CLI11) into Options, and merging the quick-form flags into a Config.

#include <optional>
#include <string>

#include "config/config.h"
#include "config/options.h"

namespace loadwatch {

struct ParsedFlags {
  Options options;
  bool show_version = false;
  /// Set when parsing stopped: print this and exit with exit_code (help, or a flag error).
  std::optional<std::string> message;
  int exit_code = 0;
};

ParsedFlags parse_flags(int argc, char** argv);

/// Adds --target and --source quick forms to `config`. Throws ConfigError ("--target=...:
/// message") on a malformed flag or a name that clashes with the config file.
void merge_flag_targets(Config& config, const Options& options);

/// Loads the config file (if any) and merges the flags: the config the daemon runs.
Config effective_config(const Options& options);

}  // namespace loadwatch
