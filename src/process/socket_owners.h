#pragma once
// Which TCP sockets a process holds: the socket inodes behind its /proc/PID/fd links, kept in
// a cache so that a target with 10,000 fds is not re-read every second.
// Per sample it does one fstat() of /proc/PID/fd (whose size is the open-fd count) and re-reads
// only the fds that are suspect, plus a rolling 1/32 of the cache for each of the 32 samples
// after the process last ran (and 1/32 every kQuietVerifyEvery samples while it does not;
// samples, not walks: a walk after a gap reads the slices of the samples it covers): readlink
// of every fd costs ~33 ms at 10,000 fds. The steps and their measurements: docs/tcp.md,
// "Per-target sockets".

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "process/fd_budget.h"
#include "process/run_clock.h"
#include "procfs/fs_root.h"

namespace loadwatch {

/// Cache of fd -> socket inode per process. Not thread-safe: owned by the tcp collector and
/// used from the sampler thread only. Holds up to kMaxDirFds open /proc/PID/fd directory fds,
/// each taken from `budget` (the daemon's shared one by default); past either, a process's
/// directory is opened by path each time.
class SocketOwners {
 public:
  static constexpr std::size_t kMaxDirFds = 256;
  /// Past kMaxDirFds, a process with at least this many fds (and 4 times those of the one
  /// giving it up) takes a kept directory fd over.
  static constexpr std::size_t kDirFdMinFds = 64;
  static constexpr unsigned kVerifySlices = 32;
  /// A process that did not run cannot change its fd table, unless it shares it with another
  /// process (clone(CLONE_FILES) without CLONE_THREAD): while it stays quiet, its cache is
  /// verified one slice every kQuietVerifyEvery samples (a whole round in 256).
  static constexpr unsigned kQuietVerifyEvery = 8;
  static constexpr std::uint64_t kRound = std::uint64_t{kVerifySlices} * kQuietVerifyEvery;

  /// `fd_dir_size`: trust the size of /proc/PID/fd as the fd count where it is not 0 (Linux >=
  /// 6.2). false behaves as on older kernels, for tests. `clock`: the samples and who ran in
  /// them (run_clock.h); while nobody keeps it, each update() counts as one sample.
  explicit SocketOwners(FdBudget& budget = FdBudget::shared(), bool fd_dir_size = true,
                        const RunClock& clock = RunClock::shared())
      : budget_(budget), fd_dir_size_(fd_dir_size), clock_(clock) {}
  ~SocketOwners();
  SocketOwners(const SocketOwners&) = delete;
  SocketOwners& operator=(const SocketOwners&) = delete;

  /// One sample. `pids`: every process whose sockets are wanted (any order, duplicates ok).
  /// `alive`: sorted, unique inodes of the TCP sockets in this sample's dump (non-zero).
  /// Processes not in `pids` are forgotten. A process that vanished mid-read is skipped.
  /// `fd_counts`: (pid, open fds) sorted by pid, counted earlier in this sample (the targets
  /// collector lists fd directories where the kernel gives no size). Where the kernel gives
  /// no count, such a count spares the listing when it matches the cache.
  /// `quiet`: sorted PIDs of `pids` that did not run since the last sample (see
  /// kQuietVerifyEvery); the others are taken to have run, and so is a quiet one that the
  /// clock saw run at a sample since the last update().
  void update(const FsRoot& proc, const std::vector<pid_t>& pids,
              const std::vector<std::uint64_t>& alive,
              const std::vector<std::pair<pid_t, long long>>& fd_counts = {},
              const std::vector<pid_t>& quiet = {});

  /// Appends the inodes of the TCP sockets (members of `alive`) that `pid`'s fds hold, as of
  /// the last update(); nothing for an unknown or vanished pid.
  void tcp_inodes(pid_t pid, std::vector<std::uint64_t>& out) const;

  /// Work counters since construction, for tests and the benchmark.
  struct Stats {
    std::uint64_t readlinks = 0;
    std::uint64_t listings = 0;
    /// Process samples served from the cache: one fstat plus the rolling check's reads.
    std::uint64_t skipped = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  enum class Kind : std::uint8_t { Tcp, OtherSocket, File };
  struct FdEntry {
    int fd;
    Kind kind;
    std::uint64_t inode;  // socket inode for Tcp / OtherSocket
  };
  struct Proc {
    int dirfd = -1;            // open /proc/PID/fd, or -1 (over the cap: paths are used instead)
    std::vector<FdEntry> fds;  // sorted by fd
    bool seen = false;
    bool count_earlier = false;  // this sample's count came from fd_counts, not the kernel
    unsigned next_slice = 0;     // the rolling check's next slice
    bool ran = false;            // ran_at is known (a new entry was read whole)
    std::uint64_t ran_at = 0;    // the last sample it was seen to run in (or a later one)
  };
  struct Pass {
    bool second = false;        // the sample's second pass: the rolling slice was read
    bool reread_files = false;  // re-read plain-file fds (a new socket nobody claims)
    long long counted = -1;     // the fd count from update()'s fd_counts, -1 none
    bool ran = true;            // the process ran at a sample since the last update()
  };

  bool refresh(const FsRoot& proc, pid_t pid, Proc& p, const Pass& pass);
  int read_link(const FsRoot& proc, pid_t pid, const Proc& p, int fd, FdEntry& e);
  bool list_fds(const FsRoot& proc, pid_t pid, Proc& p, std::vector<int>& out);
  bool is_alive(std::uint64_t inode) const;
  bool ran_since_update(const std::vector<pid_t>& quiet, pid_t pid) const;
  void close_dirfd(Proc& p);
  void give_dirfd_to_the_largest(const FsRoot& proc);

  std::unordered_map<pid_t, Proc> procs_;
  std::vector<std::uint64_t> alive_;  // this sample's dump (sorted)
  std::vector<std::uint64_t> prev_alive_;
  FdBudget& budget_;
  std::size_t open_dirfds_ = 0;
  bool fd_dir_size_ = true;
  const RunClock& clock_;
  std::uint64_t sample_ = 0;       // this update()'s sample
  std::uint64_t prev_sample_ = 0;  // the last update()'s
  Stats stats_;
};

}  // namespace loadwatch
