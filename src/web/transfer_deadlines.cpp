#include "web/transfer_deadlines.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

namespace loadwatch {

namespace {

/// The address as 16 bytes, IPv4 as v4-mapped IPv6 (as a dual-stack socket reports it).
bool address_bytes(const sockaddr_storage& sa, in6_addr& out, int& port) {
  if (sa.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(sa);
    std::memset(&out, 0, sizeof out);
    out.s6_addr[10] = out.s6_addr[11] = 0xff;
    std::memcpy(&out.s6_addr[12], &v4.sin_addr, 4);
    port = ntohs(v4.sin_port);
    return true;
  }
  if (sa.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(sa);
    out = v6.sin6_addr;
    port = ntohs(v6.sin6_port);
    return true;
  }
  return false;
}

bool parse_address(const std::string& text, in6_addr& out) {
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    std::memset(&out, 0, sizeof out);
    out.s6_addr[10] = out.s6_addr[11] = 0xff;
    std::memcpy(&out.s6_addr[12], &v4, 4);
    return true;
  }
  std::string bare = text;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']')
    bare = bare.substr(1, bare.size() - 2);
  return inet_pton(AF_INET6, bare.c_str(), &out) == 1;
}

}  // namespace

bool shutdown_socket_of(const TransferDeadlines::Peer& peer, int how) {
  in6_addr want{};
  if (!parse_address(peer.address, want)) return false;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return false;
  bool found = false;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, remote{};
    socklen_t llen = sizeof local, rlen = sizeof remote;
    in6_addr laddr{}, raddr{};
    int lport = 0, rport = 0;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &llen) != 0 ||
        !address_bytes(local, laddr, lport) || lport != peer.local_port) {
      continue;
    }
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&remote), &rlen) != 0 ||
        !address_bytes(remote, raddr, rport) || rport != peer.port ||
        std::memcmp(&raddr, &want, sizeof want) != 0) {
      continue;
    }
    found = ::shutdown(static_cast<int>(fd), how) == 0;
    break;
  }
  closedir(dir);
  return found;
}

TransferDeadlines::Watch::~Watch() {
  if (!owner_) return;
  std::lock_guard<std::mutex> lock(owner_->mutex_);  // waits for a lookup in progress
  owner_->entries_.erase(id_);
}

void TransferDeadlines::Watch::set_deadline(Clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(owner_->mutex_);
    auto it = owner_->entries_.find(id_);
    if (it != owner_->entries_.end()) it->second.deadline = deadline;
  }
  owner_->cv_.notify_all();
}

bool TransferDeadlines::Watch::expired() const {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  auto it = owner_->entries_.find(id_);
  return it != owner_->entries_.end() && it->second.expired;
}

TransferDeadlines::TransferDeadlines() : thread_([this] { run(); }) {}

TransferDeadlines::~TransferDeadlines() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

TransferDeadlines::Watch TransferDeadlines::watch(Peer peer, Clock::time_point deadline,
                                                  Direction direction) {
  std::uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_id_++;
    entries_.emplace(id, Entry{std::move(peer), deadline, direction, false});
  }
  cv_.notify_all();
  return Watch(*this, id);
}

std::uint64_t TransferDeadlines::expired_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return expired_total_;
}

void TransferDeadlines::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto now = Clock::now();
    auto next = now + std::chrono::seconds(60);
    for (auto& [id, e] : entries_) {
      if (e.expired) continue;
      if (e.deadline <= now) {
        // Under the lock: the transfer's Watch (and so its connection) outlives the lookup.
        e.expired = true;
        ++expired_total_;
        bool cut =
            shutdown_socket_of(e.peer, e.direction == Direction::receive ? SHUT_RD : SHUT_RDWR);
        spdlog::debug("http: transfer with {}:{} passed its deadline; socket {}", e.peer.address,
                      e.peer.port, cut ? "shut down" : "not found");
      } else {
        next = std::min(next, e.deadline);
      }
    }
    cv_.wait_until(lock, next);
  }
}

}  // namespace loadwatch
