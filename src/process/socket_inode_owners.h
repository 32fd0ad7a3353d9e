#pragma once
// The process that holds each of a handful of sockets, by socket inode: names the owner of
// a listener found in a host-wide dump (sock_diag and /proc/net/tcp carry no PID).

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "procfs/fs_root.h"

namespace loadwatch {

/// Cache of socket inode -> (pid, fd, comm) for a few sockets. Not thread-safe.
///
/// A known owner is re-verified every kRecheckUpdates updates with one readlink() of
/// PID/fd/N (the link still reads "socket:[INODE]"): in between, the inode still being in
/// the dump means the socket lives, and its holder rarely changes (a fork, then the parent
/// exits), so a steady sample costs no syscall here. Unknown inodes are searched for together in
/// one pass over /proc/PID/fd of every process, which costs like `ss -p` (~3 us a fd), so it runs
/// only when an inode is new, and an inode whose owner was not found (another user's
/// process without the capability, another PID namespace, a socket closed meanwhile) is
/// searched again only every kRetryUpdates updates. Keeps no fd open between calls.
class SocketInodeOwners {
 public:
  /// A search costs ~3 us per fd of the host: one whose owner stays hidden (another PID
  /// namespace) is retried every 5 minutes at 1 s samples, not every few seconds.
  static constexpr std::uint32_t kRetryUpdates = 300;
  static constexpr std::uint32_t kRecheckUpdates = 30;
  /// Inodes not asked about for this many updates are forgotten.
  static constexpr std::uint32_t kForgetUpdates = 300;

  /// `inodes`: the sockets whose owners are wanted now (a few; 0 is ignored).
  void update(const FsRoot& proc, const std::vector<std::uint64_t>& inodes);

  /// comm of the process holding `inode` as of the last update(); "" when unknown.
  const std::string& comm(std::uint64_t inode) const;

  /// How many /proc searches ran (tests check that a steady state does not search).
  std::uint64_t searches() const { return searches_; }

 private:
  struct Owner {
    pid_t pid = 0;  // 0: not found
    int fd = -1;
    std::string comm;
    std::uint32_t searched_at = 0;  // update number of the last search for it
    std::uint32_t verified_at = 0;  // update number of the last readlink that found it
    std::uint32_t wanted_at = 0;    // update number of the last update() that asked for it
  };
  bool verify(const FsRoot& proc, const Owner& o, std::uint64_t inode);
  void search(const FsRoot& proc, const std::vector<std::uint64_t>& sorted_inodes);

  std::unordered_map<std::uint64_t, Owner> owners_;
  std::uint32_t update_ = 0;
  std::uint64_t searches_ = 0;
};

}  // namespace loadwatch
