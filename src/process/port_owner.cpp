#include "process/port_owner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "procfs/proc_net_tcp_listen.h"

namespace loadwatch {

namespace {

// Reads `path` chunk by chunk and stops at the first non-LISTEN row. /proc/net/tcp is a
// seq_file generated per read() call, so stopping early also spares the kernel the work.
void scan_listeners(const std::string& path, std::uint16_t port, std::vector<std::uint64_t>& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string text;
  char chunk[65536];
  for (int i = 0; i < 4096; ++i) {  // bounded: 256 MiB of rows at most
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
    const auto last_nl = text.rfind('\n');
    if (last_nl == std::string::npos) continue;
    const bool done =
        parse_tcp_listen_inodes(std::string_view(text).substr(0, last_nl + 1), port, out);
    text.erase(0, last_nl + 1);
    if (done) {
      ::close(fd);
      return;
    }
    // The header line is only in the first chunk; later chunks have none, which the parser
    // detects by content.
  }
  if (!text.empty()) parse_tcp_listen_inodes(text, port, out);
  ::close(fd);
}

}  // namespace

std::vector<std::uint64_t> listening_inodes(const FsRoot& proc, std::uint16_t port) {
  std::vector<std::uint64_t> inodes;
  scan_listeners(proc.path("net/tcp"), port, inodes);
  scan_listeners(proc.path("net/tcp6"), port, inodes);
  std::sort(inodes.begin(), inodes.end());
  inodes.erase(std::unique(inodes.begin(), inodes.end()), inodes.end());
  return inodes;
}

bool PortOwner::verify(ProcessRegistry& registry) {
  if (holders_.empty()) return false;
  char rel[32];
  for (const Holder& h : holders_) {
    ProcessRecord* rec = registry.stat(h.pid);
    if (!rec || rec->stat.starttime != h.starttime || rec->stat.exited()) return false;
    std::snprintf(rel, sizeof rel, "fd/%d", h.fd);
    std::uint64_t inode = 0;
    if (rec->handle.readlink(rel, link_) != ReadResult::Ok || !parse_socket_link(link_, inode) ||
        inode != h.inode) {
      return false;
    }
  }
  return true;
}

void PortOwner::resolve(ProcessRegistry& registry, std::vector<pid_t>& out, std::uint64_t& denied) {
  if (verify(registry)) {
    for (const Holder& h : holders_) out.push_back(h.pid);
    return;
  }
  holders_.clear();
  const std::vector<std::uint64_t> inodes = listening_inodes(registry.proc(), port_);
  if (inodes.empty()) {
    unresolved_.clear();
    return;
  }
  if (inodes == unresolved_ && registry.generation() - unresolved_gen_ < kRetrySamples) return;

  ++searches_;
  registry.refresh_listing(false);
  for (ProcessRecord* rec : registry.processes()) {
    if (rec->stat.exited()) continue;
    ReadResult r = rec->handle.for_each_fd([&](int fd, const std::string& target) {
      std::uint64_t inode = 0;
      if (parse_socket_link(target, inode) &&
          std::binary_search(inodes.begin(), inodes.end(), inode) &&
          std::none_of(holders_.begin(), holders_.end(), [&](const Holder& h) {
            return h.pid == rec->pid() && h.inode == inode;  // dup()ed: verify one fd
          })) {
        holders_.push_back(Holder{rec->pid(), rec->stat.starttime, fd, inode});
      }
    });
    if (r == ReadResult::Denied) ++denied;
  }
  if (holders_.empty()) {
    unresolved_ = inodes;
    unresolved_gen_ = registry.generation();
    return;
  }
  unresolved_.clear();
  for (const Holder& h : holders_) out.push_back(h.pid);
}

}  // namespace loadwatch
