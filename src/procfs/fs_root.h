#pragma once
// A filesystem root (procfs or sysfs) so every collector can run against a fixture tree.

#include <string>
#include <string_view>

namespace loadwatch {

/// Paths below a mount point, e.g. FsRoot("/proc").path("net/tcp") == "/proc/net/tcp".
/// Immutable after construction; safe to share between threads.
class FsRoot {
 public:
  explicit FsRoot(std::string root);

  const std::string& root() const { return root_; }
  std::string path(std::string_view relative) const;

  /// True when the root is the running kernel's own /proc. Kernel interfaces such as netlink
  /// describe that kernel only, so they stand in for files below this root only then, not
  /// for a fixture tree or another host's procfs mounted elsewhere (/host/proc).
  bool is_live_procfs() const;

  /// Reads a whole file below the root into `out` (until EOF: /proc files report st_size 0
  /// or 4096, so the size is never trusted). Returns 0 or the errno of the failure.
  int read(std::string_view relative, std::string& out) const;

  /// Like read(), but throws std::runtime_error naming the path on any failure; for host
  /// files whose absence is a collector error.
  std::string read_or_throw(std::string_view relative) const;

 private:
  std::string root_;
};

/// Reads a whole file by absolute path; returns 0 or errno. Used by FsRoot and by callers
/// holding a path already built.
int read_whole_file(const std::string& path, std::string& out);

}  // namespace loadwatch
