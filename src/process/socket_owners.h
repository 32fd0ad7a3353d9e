#pragma once
// Which TCP sockets a process holds: the socket inodes behind its /proc/PID/fd links, kept in
// a cache so that a target with 10,000 fds is not re-read every second.
//
// Measured here (2 vCPUs, kernel 6.18, 10,000 fds): readlink of every /proc/PID/fd/N costs
// ~33 ms (3.3 us a link); listing the directory (getdents64) ~8 ms; fstat() of the directory
// ~10 us, and its st_size is the open-fd count (Linux >= 6.2). So a sample does, per process:
//  1. fstat /proc/PID/fd: the fd count.
//  2. Re-read only what is suspect: fds that held a socket now gone from the dump (closed;
//     the number is usually reused at once for the next accept(), as the kernel hands out
//     the lowest free fd); and a directory listing only when the fd count says the cache
//     misses some numbers. A cached non-TCP socket inode that shows up in the dump (socket()
//     earlier, connect()/listen() now) is promoted without any read. With a stable fd set
//     (keep-alive connections) that is one fstat() per process plus the rolling check (4).
//  3. When the dump holds a socket that is new since the last sample and that no cached fd
//     explains, processes with few plain-file fds (<= 256) re-read those: a file closed and
//     a socket opened at the same number leaves the count unchanged.
//  4. A rolling check re-reads 1/32 of each process's cached fds every sample, so a stale
//     entry (a fd dup2()'d over, a socket received with SCM_RIGHTS while the count stayed
//     the same) is corrected within 32 samples at ~3 % of the cost of a full re-read.

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "process/fd_budget.h"
#include "procfs/fs_root.h"

namespace loadwatch {

/// Cache of fd -> socket inode per process. Not thread-safe: owned by the tcp collector and
/// used from the sampler thread only. Holds up to kMaxDirFds open /proc/PID/fd directory fds,
/// each taken from `budget` (the daemon's shared one by default); past either, a process's
/// directory is opened by path each time.
class SocketOwners {
 public:
  static constexpr std::size_t kMaxDirFds = 256;
  static constexpr unsigned kVerifySlices = 32;

  explicit SocketOwners(FdBudget& budget = FdBudget::shared()) : budget_(budget) {}
  ~SocketOwners();
  SocketOwners(const SocketOwners&) = delete;
  SocketOwners& operator=(const SocketOwners&) = delete;

  /// One sample. `pids`: every process whose sockets are wanted (any order, duplicates ok).
  /// `alive`: sorted, unique inodes of the TCP sockets in this sample's dump (non-zero).
  /// Processes not in `pids` are forgotten. A process that vanished mid-read is skipped.
  void update(const FsRoot& proc, const std::vector<pid_t>& pids,
              const std::vector<std::uint64_t>& alive);

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
    long long count = -1;      // fd count at the last read, -1 unknown
    std::vector<FdEntry> fds;  // sorted by fd
    bool seen = false;
  };

  bool refresh(const FsRoot& proc, pid_t pid, Proc& p, bool new_sockets);
  int read_link(const FsRoot& proc, pid_t pid, const Proc& p, int fd, FdEntry& e);
  bool list_fds(const FsRoot& proc, pid_t pid, Proc& p, std::vector<int>& out);
  bool is_alive(std::uint64_t inode) const;
  void close_dirfd(Proc& p);

  std::unordered_map<pid_t, Proc> procs_;
  std::vector<std::uint64_t> alive_;  // this sample's dump (sorted)
  std::vector<std::uint64_t> prev_alive_;
  FdBudget& budget_;
  std::size_t open_dirfds_ = 0;
  unsigned sample_ = 0;
  Stats stats_;
};

}  // namespace loadwatch
