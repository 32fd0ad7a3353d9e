#include "web/server_core.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>

namespace loadwatch::http_transport {

const char* rejection_name(Rejection r) {
  switch (r) {
    case Rejection::unauthorized:
      return "unauthorized";
    case Rejection::auth_busy:
      return "auth_busy";
    case Rejection::bad_framing:
      return "bad_framing";
    case Rejection::body_not_allowed:
      return "body_not_allowed";
    case Rejection::body_too_large:
      return "body_too_large";
    case Rejection::body_incomplete:
      return "body_incomplete";
    case Rejection::body_memory:
      return "body_memory";
    case Rejection::too_many_requests:
      return "too_many_requests";
    case Rejection::transfer_timeout:
      return "transfer_timeout";
    case Rejection::bad_request:
      return "bad_request";
    case Rejection::header_too_large:
      return "header_too_large";
    case Rejection::address_requests:
      return "address_requests";
    case Rejection::address_connections:
      return "address_connections";
    case Rejection::connections_full:
      return "connections_full";
    case Rejection::count_:
      break;
  }
  return "?";
}

int connection_cap(int max_connections) {
  rlimit rl{};
  int cap = max_connections;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    cap = static_cast<int>(std::min<rlim_t>(rl.rlim_cur / 4, cap));
  }
  return std::max(cap, 4);
}

HttpResponse plain(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

const Route* ServerCore::find_route(const std::string& path) const {
  if (auto it = routes.find(path); it != routes.end()) return &it->second;
  for (const auto& [prefix, r] : prefix_routes) {
    if (path.size() > prefix.size() && path.rfind(prefix, 0) == 0) return &r;
  }
  return nullptr;
}

Clock::duration ServerCore::transfer_allowance(std::size_t bytes) const {
  return std::chrono::milliseconds(2 * settings.request_timeout_ms) +
         std::chrono::milliseconds(bytes * 1000 /
                                   std::max<std::size_t>(1, settings.min_transfer_rate));
}

bool ServerCore::reserve_body(std::size_t bytes) {
  std::size_t used = body_bytes.load();
  do {
    if (used + bytes > settings.max_body_memory) return false;
  } while (!body_bytes.compare_exchange_weak(used, used + bytes));
  return true;
}

void ServerCore::release_body(std::size_t bytes) {
  if (bytes == 0) return;
  std::size_t left = body_bytes.fetch_sub(bytes) - bytes;
  // Large bodies leave glibc's arenas holding the pages (its mmap threshold grows with each
  // large free): give them back once the bodies in flight are gone, or every 64 MiB.
  std::size_t released = released_since_trim.fetch_add(bytes) + bytes;
  if (released >= (1u << 20) && (left == 0 || released >= settings.max_body_memory) &&
      released_since_trim.exchange(0) >= (1u << 20)) {
    malloc_trim(0);
  }
}

}  // namespace loadwatch::http_transport
