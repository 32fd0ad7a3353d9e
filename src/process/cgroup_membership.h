#pragma once
// Confirms in one read that processes are still in the cgroups their /proc/PID/cgroup texts
// name. A cgroup's thread listing (v2 cgroup.threads, v1 tasks) holds the TID of every task
// directly in it, in the reader's pid namespace, and a thread group leader's TID is its PID:
// a process found there has its leader in that cgroup, which is what /proc/PID/cgroup shows.
// Whatever is not found (moved, exiting, a listing that cannot be read) is read on its own.
//
// Only the lines the CPU figures read are confirmed: the v2 line and the v1 cpu hierarchy's
// (procfs/cpu_limit.h). The listings are opened afresh each time: a v1 kept fd may hand out
// a pid list cached up to a second before (kernel/cgroup/cgroup-v1.c).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/fs_root.h"

namespace loadwatch {

class CgroupMembership {
 public:
  /// Enabled per hierarchy only where `proc` is the live procfs of this pid namespace and a
  /// cgroup mount below `sys` lists this thread in the cgroup /proc/thread-self/cgroup names
  /// (so fixture trees and foreign namespaces always fall back to the per-process read).
  CgroupMembership(const FsRoot& proc, const FsRoot& sys);

  /// Whether `text` can be confirmed by listings: it has a line the CPU figures read, and
  /// every such line names a cgroup of an enabled hierarchy.
  bool checkable(std::string_view text) const;

  /// Starts a sample: listings read in an earlier one are stale.
  void begin_sample();

  /// Whether `pid` is listed in every cgroup of `text` the CPU figures read (`text` must be
  /// checkable), each listing read at most once a sample. `members`: processes of that text
  /// asked about this sample. A listing more than kTidsPerMember times longer costs more than
  /// their own files (measured in docs/benchmarks.md): it is not read, and false is returned.
  bool listed(std::string_view text, pid_t pid, std::size_t members);

  static constexpr std::size_t kTidsPerMember = 4;
  static constexpr std::size_t kMaxListingBytes = 64 * 1024;  // docs/limits.md

 private:
  struct Listing {
    std::uint32_t gen = 0;      // sample `tids` was read in
    bool ok = false;            // that read succeeded
    std::size_t size = 0;       // TIDs at the last read (kMaxListingBytes / 2 when over the cap)
    bool sized = false;         // `size` is known
    std::uint32_t skipped = 0;  // refreshes since the last read (too long: retried now and then)
    std::vector<pid_t> tids;    // sorted
  };

  /// The listing of `file` (below `sys`), read this sample when worth it; null when not.
  const Listing* listing(const std::string& file, std::size_t members);

  FsRoot sys_;
  std::string v2_root_;     // below sys_, "" when disabled
  std::string v1cpu_root_;  // below sys_, "" when disabled
  std::uint32_t gen_ = 0;
  std::map<std::string, Listing, std::less<>> listings_;
  std::string buf_;
  std::string file_;
  // The listings of the last text that found its process in all of them this sample: the
  // members sharing that text (most of a group) are each a search in them, without the text
  // parsed and the paths built again. Valid while cached_gen_ is this sample's.
  std::string cached_text_;
  std::uint32_t cached_gen_ = 0;
  std::vector<const Listing*> cached_;
};

}  // namespace loadwatch
