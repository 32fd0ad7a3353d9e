#include "process/socket_inode_owners.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "process/process_handle.h"

namespace loadwatch {

namespace {

// PID/comm without its trailing newline; "" when unreadable.
std::string read_comm(ProcessHandle& h) {
  std::string comm;
  if (h.read_other("comm", comm) != ReadResult::Ok) return {};
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
  while (left > 0) {
    const dirent* de = ::readdir(procdir);
    if (!de) break;
    pid_t pid = 0;
    if (!parse_pid_name(de->d_name, pid)) continue;
    // No budget: the handle keeps no fd, so the search stays out of the kept-fd budget.
    // A process gone, or another user's without the capability, lists nothing.
    ProcessHandle h(::dirfd(procdir), pid, nullptr);
    h.for_each_fd([&](int fd, const std::string& link) {
      std::uint64_t inode = 0;
      if (!parse_socket_link(link, inode) ||
          !std::binary_search(sorted.begin(), sorted.end(), inode)) {
        return;
      }
      Owner& o = owners_[inode];
      if (o.pid != 0) return;  // several holders (fork, dup): the first found names it
      o.pid = pid;
      o.fd = fd;
      o.comm = read_comm(h);
      o.verified_at = update_;
      --left;
    });
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
