#include "process/socket_inode_owners.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "process/process_handle.h"

namespace loadwatch {

namespace {

// PID/comm without its trailing newline; "" when unreadable.
std::string read_comm(const FsRoot& proc, pid_t pid) {
  std::string comm;
  if (proc.read(std::to_string(pid) + "/comm", comm) != 0) return {};
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  return comm;
}

}  // namespace

bool SocketInodeOwners::verify(const FsRoot& proc, const Owner& o, std::uint64_t inode) {
  if (o.pid <= 0) return false;
  char rel[48];
  std::snprintf(rel, sizeof rel, "/%d/fd/%d", static_cast<int>(o.pid), o.fd);
  char buf[64];
  const ssize_t n = ::readlink((proc.root() + rel).c_str(), buf, sizeof buf);
  if (n <= 0) return false;
  std::uint64_t got = 0;
  return parse_socket_link(std::string_view(buf, static_cast<std::size_t>(n)), got) && got == inode;
}

void SocketInodeOwners::search(const FsRoot& proc, const std::vector<std::uint64_t>& sorted) {
  ++searches_;
  std::size_t left = sorted.size();
  DIR* procdir = ::opendir(proc.root().c_str());
  if (!procdir) return;
  char buf[64];
  while (left > 0) {
    const dirent* de = ::readdir(procdir);
    if (!de) break;
    pid_t pid = 0;
    if (!parse_pid_name(de->d_name, pid)) continue;
    const std::string fd_dir = proc.path(std::string(de->d_name) + "/fd");
    // One directory fd at a time: the search stays out of the kept-fd budget.
    DIR* fds = ::opendir(fd_dir.c_str());
    if (!fds) continue;  // gone, or another user's process without the capability
    while (const dirent* fe = ::readdir(fds)) {
      int fd = -1;
      const char* end = fe->d_name + std::strlen(fe->d_name);
      if (std::from_chars(fe->d_name, end, fd).ptr != end || fd < 0) continue;
      const ssize_t n = ::readlinkat(::dirfd(fds), fe->d_name, buf, sizeof buf);
      std::uint64_t inode = 0;
      if (n <= 0 || !parse_socket_link(std::string_view(buf, static_cast<std::size_t>(n)), inode))
        continue;
      if (!std::binary_search(sorted.begin(), sorted.end(), inode)) continue;
      Owner& o = owners_[inode];
      if (o.pid != 0) continue;  // several holders (fork, dup): the first found names it
      o.pid = pid;
      o.fd = fd;
      o.comm = read_comm(proc, pid);
      o.verified_at = update_;
      --left;
    }
    ::closedir(fds);
  }
  ::closedir(procdir);
}

void SocketInodeOwners::update(const FsRoot& proc, const std::vector<std::uint64_t>& inodes) {
  ++update_;
  std::vector<std::uint64_t> wanted;
  for (std::uint64_t inode : inodes) {
    if (inode == 0) continue;
    auto [it, fresh] = owners_.try_emplace(inode);
    Owner& o = it->second;
    o.wanted_at = update_;
    if (!fresh && o.pid != 0) {
      if (update_ - o.verified_at < kRecheckUpdates) continue;
      if (verify(proc, o, inode)) {
        o.verified_at = update_;
        continue;
      }
      o = Owner{};  // the holder closed it or exited: search anew
      o.wanted_at = update_;
    } else if (!fresh && update_ - o.searched_at < kRetryUpdates) {
      continue;  // not found lately: wait before searching again
    }
    o.searched_at = update_;
    wanted.push_back(inode);
  }
  if (!wanted.empty()) {
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    search(proc, wanted);
  }
  std::erase_if(owners_,
                [this](const auto& kv) { return update_ - kv.second.wanted_at >= kForgetUpdates; });
}

const std::string& SocketInodeOwners::comm(std::uint64_t inode) const {
  static const std::string kUnknown;
  auto it = owners_.find(inode);
  return it == owners_.end() ? kUnknown : it->second.comm;
}

}  // namespace loadwatch
