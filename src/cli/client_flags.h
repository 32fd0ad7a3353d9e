#pragma once
// The flags that say which loadwatches a subcommand talks to, declared once for `run`,
// `report` and `compare`: --url (repeatable, NAME=URL to name the host), --url-file, --user,
// --password-file, --ca-file, --timeout.

#include <cstddef>
#include <string>
#include <vector>

#include "cli/run_client.h"

namespace loadwatch {

class CommandLine;  // cli/command_line.h; not every includer declares flags

/// Caps on a URL file (docs/limits.md).
inline constexpr std::size_t kMaxUrlFileBytes = 64 * 1024;
inline constexpr std::size_t kMaxDaemons = 256;

struct ClientFlags {
  std::vector<std::string> urls;  // as given: URL or NAME=URL
  std::string url_file;
  std::string user, password_file, ca_file;
  std::string timeout = "10s";
  /// Defaults from $LOADWATCH_URL (URLs separated by commas), $LOADWATCH_USER and
  /// $LOADWATCH_PASSWORD_FILE, and http://127.0.0.1:9797 when no URL is given at all.
  bool env_defaults = false;
};

/// One loadwatch to talk to: the name its host goes by in messages and reports (NAME of
/// NAME=URL, else the URL's host:port) and how to reach it.
struct Daemon {
  std::string name;
  bool named = false;  // NAME=URL gave the name
  RunClientOptions options;
};

/// Declares the flags on `app`; `what` says what the loadwatches are for, in --url's help.
void add_client_flags(CommandLine& app, ClientFlags& flags, const std::string& what);

/// The loadwatches the flags name, in the order given (--url first, then --url-file's lines);
/// none when no URL was given and there are no env defaults. Throws std::invalid_argument
/// naming the flag: a bad URL or duration, an unreadable or oversized file, two hosts of one
/// name, more than kMaxDaemons.
std::vector<Daemon> resolve_daemons(const ClientFlags& flags);

/// The flags that reach the same loadwatches with the same credentials, for a child
/// `loadwatch`.
std::vector<std::string> client_args(const std::vector<Daemon>& daemons, const ClientFlags& flags);

}  // namespace loadwatch
