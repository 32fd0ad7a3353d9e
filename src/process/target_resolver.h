#pragma once
// Selectors: which processes are a target's roots this sample (README "Target
// selectors"). Descendants are added separately (process_tree.h).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "process/process_registry.h"
#include "procfs/fs_root.h"

namespace loadwatch {

struct ResolveContext {
  ProcessRegistry& registry;
  const FsRoot& sys;
  /// EACCES met while resolving (e.g. exe of another user's process): counted by the
  /// collector as partial reads of the target.
  std::uint64_t denied = 0;
};

/// One target's selector with whatever it caches between samples. Not thread-safe: used
/// from the sampler thread only.
///
/// pid, pidfile, unit and port resolve directly and never walk /proc; comm, exe and cmdline
/// walk the registry's one listing per sample (scans_processes()).
class TargetResolver {
 public:
  virtual ~TargetResolver() = default;
  /// Appends this sample's root PIDs to `roots` (unsorted, may repeat).
  virtual void resolve(ResolveContext& ctx, std::vector<pid_t>& roots) = 0;
  /// True for comm, exe and cmdline: the collector lists /proc once per sample with fresh
  /// stat (comm, exec detection) for all such targets before resolving.
  virtual bool scans_processes() const { return false; }
};

std::unique_ptr<TargetResolver> make_target_resolver(const Selector& selector);

/// Parses a pidfile's content: a positive decimal PID, surrounded by blanks/newlines at
/// most. nullopt for anything else (empty, garbage, "123abc", 0, negative).
std::optional<pid_t> parse_pidfile(std::string_view text);

/// How much of /proc/PID/cmdline a cmdline: selector reads and matches: a JVM's classpath can
/// pass 50 KB; the kernel's limit is far larger (MAX_ARG_STRLEN pages per argument). A
/// pattern matches within the first kMaxCmdlineBytes only (docs/limits.md).
inline constexpr std::size_t kMaxCmdlineBytes = 128u << 10;

/// Joins /proc/PID/cmdline's NUL-separated arguments with spaces (trailing NULs dropped).
std::string join_cmdline(std::string_view raw);

/// Whether a resolved /proc/PID/exe target matches an exe: selector value: the whole path
/// when the value has a '/', else the basename. A " (deleted)" suffix (the binary was
/// replaced on disk, e.g. by a package upgrade) is ignored.
bool exe_matches(std::string_view link, std::string_view value);

}  // namespace loadwatch
