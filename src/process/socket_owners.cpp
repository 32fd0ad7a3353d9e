#include "process/socket_owners.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>

#include "process/process_handle.h"

namespace loadwatch {

namespace {

bool contains(const std::vector<std::uint64_t>& sorted, std::uint64_t v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

std::string fd_dir(const FsRoot& proc, pid_t pid) { return proc.path(std::to_string(pid) + "/fd"); }

bool vanished(int err) { return err == ENOENT || err == ESRCH; }

}  // namespace

SocketOwners::~SocketOwners() {
  for (auto& [pid, p] : procs_) close_dirfd(p);
}

void SocketOwners::close_dirfd(Proc& p) {
  if (p.dirfd < 0) return;
  ::close(p.dirfd);
  p.dirfd = -1;
  --open_dirfds_;
  budget_.give();
}

bool SocketOwners::is_alive(std::uint64_t inode) const { return contains(alive_, inode); }

bool SocketOwners::ran_since_update(const std::vector<pid_t>& quiet, pid_t pid) const {
  return !std::binary_search(quiet.begin(), quiet.end(), pid) ||
         clock_.ran_after(pid, prev_sample_);
}

int SocketOwners::read_link(const FsRoot& proc, pid_t pid, const Proc& p, int fd, FdEntry& e) {
  char name[16];
  auto [end, ec] = std::to_chars(name, name + sizeof name - 1, fd);
  *end = '\0';
  char buf[128];
  ssize_t n;
  ++stats_.readlinks;
  if (p.dirfd >= 0) {
    n = ::readlinkat(p.dirfd, name, buf, sizeof buf);
  } else {
    n = ::readlink((fd_dir(proc, pid) + "/" + name).c_str(), buf, sizeof buf);
  }
  if (n < 0) return errno;
  e.fd = fd;
  e.kind = Kind::File;
  e.inode = 0;
  std::uint64_t ino = 0;
  if (parse_socket_link(std::string_view(buf, static_cast<std::size_t>(n)), ino)) {
    e.inode = ino;
    e.kind = is_alive(ino) ? Kind::Tcp : Kind::OtherSocket;
  }
  return 0;
}

bool SocketOwners::list_fds(const FsRoot& proc, pid_t pid, Proc& p, std::vector<int>& out) {
  out.clear();
  int dfd = p.dirfd;
  bool own = false;
  if (dfd < 0) {
    dfd = ::open(fd_dir(proc, pid).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return false;
    own = true;
  } else if (::lseek(dfd, 0, SEEK_SET) < 0) {
    return false;
  }
  ++stats_.listings;
  alignas(8) char buf[32768];
  bool ok = true;
  // Bounded: a process has at most RLIMIT_NOFILE (<= fs.nr_open, 2^30) fds; every pass of a
  // non-empty directory returns at least one entry.
  for (int pass = 0; pass < (1 << 22); ++pass) {
    long n = ::syscall(SYS_getdents64, dfd, buf, sizeof buf);
    if (n < 0) {
      ok = false;
      break;
    }
    if (n == 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      off += d->d_reclen;
      int fd = 0;
      const char* name = d->d_name;
      const char* e = name + std::strlen(name);
      auto [q, ec] = std::from_chars(name, e, fd);
      if (ec == std::errc() && q == e) out.push_back(fd);  // skips "." and ".."
    }
  }
  if (own) ::close(dfd);
  std::sort(out.begin(), out.end());
  return ok;
}

bool SocketOwners::refresh(const FsRoot& proc, pid_t pid, Proc& p, const Pass& pass) {
  // 1. fd count, O(1).
  struct stat st {};
  int rc = p.dirfd >= 0 ? ::fstat(p.dirfd, &st) : ::stat(fd_dir(proc, pid).c_str(), &st);
  if (rc != 0) return false;  // vanished (ENOENT/ESRCH) or not ours to read (EACCES)
  // st_size is the open-fd count since Linux 6.2 (proc_fd_getattr()); 0 before: unknown.
  // Then a count taken earlier in this sample stands in for the first pass. It predates the
  // dump, so a socket opened since is missing from it: the second pass lists (update()).
  long long count = fd_dir_size_ && st.st_size > 0 ? static_cast<long long>(st.st_size) : -1;
  if (!pass.second) p.count_earlier = count < 0 && pass.counted >= 0;
  if (count < 0) count = pass.counted;  // the second pass has none

  // 2. Promote sockets that appeared in the dump (socket() then, connect()/listen() now).
  for (auto& e : p.fds) {
    if (e.kind == Kind::OtherSocket && is_alive(e.inode)) e.kind = Kind::Tcp;
  }

  // 3. Re-read suspect fds only: sockets gone from the dump (closed: the number is usually
  //    reused at once, as the kernel hands out the lowest free fd), the rolling verification
  //    slices of the samples since the last update() (one for each of the kVerifySlices
  //    samples after the process last ran, then one every kQuietVerifyEvery samples), and,
  //    when a new socket nobody claims exists, plain files.
  std::size_t suspects = 0;  // reads for a reason other than the rolling check
  if (!pass.second && pass.ran) {
    p.ran = true;
    p.ran_at = sample_;  // it ran at a sample in (prev_sample_, sample_]: count them all
  }
  unsigned slices = 0;
  if (!pass.second) {
    // Bounded: a gap of more than a round of samples owes at most a whole round.
    const std::uint64_t from =
        std::max(prev_sample_ + 1, sample_ - std::min<std::uint64_t>(sample_, kRound));
    const bool ran_in_gap = pass.ran;
    for (std::uint64_t s = from; s <= sample_ && slices < kVerifySlices; ++s) {
      const bool recent = ran_in_gap || (p.ran && s >= p.ran_at && s - p.ran_at < kVerifySlices);
      slices += recent || (s + static_cast<std::uint64_t>(pid)) % kQuietVerifyEvery == 0;
    }
  }
  const unsigned first_slice = p.next_slice;
  p.next_slice = (p.next_slice + slices) % kVerifySlices;
  auto in_slices = [&](std::size_t i) {
    return slices > 0 && (i % kVerifySlices + kVerifySlices - first_slice) % kVerifySlices < slices;
  };
  std::size_t w = 0;
  for (std::size_t i = 0; i < p.fds.size(); ++i) {
    FdEntry e = p.fds[i];
    const bool suspect =
        (e.kind == Kind::Tcp && !is_alive(e.inode)) || (pass.reread_files && e.kind == Kind::File);
    suspects += suspect;
    // The second pass of a sample leaves the slice to the first: it was just read.
    if (suspect || in_slices(i)) {
      int err = read_link(proc, pid, p, e.fd, e);
      if (err != 0) {
        if (vanished(err) && p.dirfd >= 0 && ::fstat(p.dirfd, &st) != 0) return false;
        continue;  // that fd was closed: drop it
      }
    }
    p.fds[w++] = e;
  }
  p.fds.resize(w);

  // 4. New fd numbers: list the directory only when the count says the cache misses some
  //    (or the kernel cannot tell the count).
  bool listed_dir = false;
  if (count < 0 || static_cast<long long>(p.fds.size()) != count) {
    std::vector<int> listed;
    if (!list_fds(proc, pid, p, listed)) return false;
    listed_dir = true;
    std::vector<FdEntry> merged;
    merged.reserve(listed.size());
    std::size_t j = 0;
    for (int fd : listed) {
      while (j < p.fds.size() && p.fds[j].fd < fd) ++j;  // cached but not listed: closed
      if (j < p.fds.size() && p.fds[j].fd == fd) {
        merged.push_back(p.fds[j]);
        continue;
      }
      FdEntry e{};
      if (read_link(proc, pid, p, fd, e) == 0) merged.push_back(e);
    }
    p.fds.swap(merged);
  }
  if (!listed_dir && suspects == 0) ++stats_.skipped;
  return true;
}

void SocketOwners::update(const FsRoot& proc, const std::vector<pid_t>& pids,
                          const std::vector<std::uint64_t>& alive,
                          const std::vector<std::pair<pid_t, long long>>& fd_counts,
                          const std::vector<pid_t>& quiet) {
  prev_sample_ = sample_;
  sample_ = std::max(clock_.now(), sample_ + 1);
  prev_alive_.swap(alive_);
  alive_ = alive;
  for (auto& [pid, p] : procs_) p.seen = false;

  // Sockets new since the last sample that no cached fd explains: some process opened them
  // without changing its fd count visibly (or it is not one of ours). First sample: all new.
  std::vector<std::uint64_t> fresh;
  std::set_difference(alive_.begin(), alive_.end(), prev_alive_.begin(), prev_alive_.end(),
                      std::back_inserter(fresh));
  std::vector<bool> claimed(fresh.size(), false);
  auto claim_all = [&](const Proc& p) {
    if (fresh.empty()) return;
    for (const auto& e : p.fds) {
      if (e.kind == Kind::File) continue;
      auto it = std::lower_bound(fresh.begin(), fresh.end(), e.inode);
      if (it != fresh.end() && *it == e.inode) claimed[it - fresh.begin()] = true;
    }
  };

  std::vector<pid_t> order(pids);
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  std::vector<pid_t> kept_pids;
  for (pid_t pid : order) {
    auto [it, inserted] = procs_.try_emplace(pid);
    Proc& p = it->second;
    if (inserted && open_dirfds_ < kMaxDirFds && budget_.take()) {
      p.dirfd = ::open(fd_dir(proc, pid).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (p.dirfd >= 0) {
        ++open_dirfds_;
      } else {
        budget_.give();
      }
    }
    Pass first;
    auto known = std::lower_bound(fd_counts.begin(), fd_counts.end(), std::make_pair(pid, -1LL));
    if (known != fd_counts.end() && known->first == pid) first.counted = known->second;
    first.ran = ran_since_update(quiet, pid);
    if (!refresh(proc, pid, p, first)) {
      close_dirfd(p);
      procs_.erase(it);
      continue;
    }
    p.seen = true;
    claim_all(p);
    kept_pids.push_back(pid);
  }
  give_dirfd_to_the_largest(proc);
  // Second pass, only when some new socket is still unclaimed: re-read the plain-file fds of
  // processes with few of them (a file closed and a socket opened at the same number keeps
  // the count). Processes with many files, and quiet ones, are left to the rolling check. A
  // process whose count was taken before the dump is listed: the new socket may be one it
  // opened since.
  if (std::find(claimed.begin(), claimed.end(), false) != claimed.end()) {
    for (pid_t pid : kept_pids) {
      Proc& p = procs_[pid];
      std::size_t files = 0;
      for (const auto& e : p.fds) files += e.kind == Kind::File;
      Pass second;
      second.second = true;
      // A process that did not run since the last sample opened no socket.
      second.reread_files = files > 0 && files <= 256 && ran_since_update(quiet, pid);
      if (!second.reread_files && !p.count_earlier) continue;
      if (!refresh(proc, pid, p, second)) p.fds.clear();
    }
  }
  for (auto it = procs_.begin(); it != procs_.end();) {
    if (!it->second.seen) {
      close_dirfd(it->second);
      it = procs_.erase(it);
    } else {
      ++it;
    }
  }
}

void SocketOwners::give_dirfd_to_the_largest(const FsRoot& proc) {
  if (open_dirfds_ < kMaxDirFds) return;
  // Past the cap a process's links are read by path: ~3.0 us a link against ~2.3 us through a
  // kept directory fd (docs/tcp.md). The kept fd goes to where the links are: one move a walk
  // at most, from the process with the fewest fds to the one with the most without one.
  std::pair<const pid_t, Proc>* want = nullptr;
  Proc* give = nullptr;
  for (auto& kv : procs_) {
    Proc& p = kv.second;
    if (p.dirfd < 0) {
      if (p.seen && p.fds.size() >= kDirFdMinFds &&
          (!want || p.fds.size() > want->second.fds.size())) {
        want = &kv;
      }
    } else if (!give || p.fds.size() < give->fds.size()) {
      give = &p;
    }
  }
  if (!want || !give || give->fds.size() * 4 > want->second.fds.size()) return;
  const int fd = ::open(fd_dir(proc, want->first).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::close(give->dirfd);  // its budget slot goes over with the cap's place
  give->dirfd = -1;
  want->second.dirfd = fd;
}

void SocketOwners::tcp_inodes(pid_t pid, std::vector<std::uint64_t>& out) const {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  for (const auto& e : it->second.fds) {
    if (e.kind == Kind::Tcp) out.push_back(e.inode);
  }
}

}  // namespace loadwatch
