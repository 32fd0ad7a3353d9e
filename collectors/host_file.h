#pragma once
// A host file the collectors read every sample (stat, meminfo, net/sockstat, a sysctl...),
// through an fd kept open between samples: a pread at offset 0 makes the kernel write the
// text afresh (seq_file and proc_sys files), for about half of what an open, a read and a
// close cost (docs/benchmarks.md, "fifth round"). Shared by the host collectors.

#include <stdexcept>
#include <string>
#include <string_view>

#include "procfs/fs_root.h"

namespace loadwatch {

class FdBudget;

/// One file below a FsRoot, by relative path. The fd is kept only when the open file is on
/// procfs or sysfs (fstatfs) and the daemon's kept-fd budget has room: a fixture tree's
/// regular file, which a rename can replace, is opened, read and closed every time, as are
/// all files past the budget. A read that fails on the kept fd closes it and opens the path
/// once more, so a file that went away (a sysctl of an unloaded module) reports the open's
/// error, never old text. A /proc/net file is kept in the network namespace the daemon opened
/// it in, its own, as an open every sample had. Not thread-safe: one collector's, on the
/// sampler thread.
class HostFile {
 public:
  /// `budget` null: the daemon's (FdBudget::shared()).
  explicit HostFile(std::string relative, FdBudget* budget = nullptr);
  ~HostFile();
  HostFile(HostFile&& other) noexcept;
  HostFile& operator=(HostFile&&) = delete;
  HostFile(const HostFile&) = delete;
  HostFile& operator=(const HostFile&) = delete;

  const std::string& relative() const { return relative_; }
  /// Whether an fd is kept now (tests, benchmarks).
  bool kept() const { return fd_ >= 0; }

  /// Reads the whole file below `root` into `out` (until EOF, as FsRoot::read). Returns 0 or
  /// the errno of the failure. Another root than the last read's re-opens.
  int read(const FsRoot& root, std::string& out);

  /// Like read(), but throws std::runtime_error naming the path on any failure.
  void read_or_throw(const FsRoot& root, std::string& out);

  /// Reads and parses, naming the path in the error of either step (as host_parse's
  /// read_and_parse does for a FsRoot).
  template <class Parse>
  auto read_and_parse(const FsRoot& root, Parse parse) {
    read_or_throw(root, text_);
    try {
      return parse(std::string_view(text_));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(root.path(relative_) + ": " + e.what());
    }
  }

 private:
  void close_kept();
  int read_by_path(const FsRoot& root, std::string& out);

  std::string relative_;
  FdBudget* budget_;
  int fd_ = -1;
  std::string root_;  // the root the kept fd was opened below
  std::string text_;  // read_and_parse()'s buffer, reused
};

}  // namespace loadwatch
