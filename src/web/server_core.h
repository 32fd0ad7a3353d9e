#pragma once
// What every connection of the HTTP server shares: the settings, the route table, the web config
// in force, the limits (body memory, the connection table, the handler pools) and the counters of
// what was turned away. The transport parts behind HttpServer (http_listener, http_session) use
// it; nothing else does.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "web/basic_auth.h"
#include "web/connection_table.h"
#include "web/handler_pool.h"
#include "web/http_message.h"
#include "web/http_server_settings.h"
#include "web/web_config.h"

namespace loadwatch::http_transport {

using Clock = std::chrono::steady_clock;

/// Why a request or connection was turned away (counted for HttpServer::stats()).
enum class Rejection {
  unauthorized,
  auth_busy,
  bad_framing,
  body_not_allowed,
  body_too_large,
  body_incomplete,
  body_memory,
  too_many_requests,
  transfer_timeout,
  bad_request,
  header_too_large,
  address_requests,
  answers_busy,
  address_connections,
  connections_full,
  count_
};

/// The reason label of `r` ("body_too_large").
const char* rejection_name(Rejection r);

struct Route {
  HttpHandler handler;
  std::size_t max_body;
};

/// The web config in force: immutable once published, swapped as a whole on reload.
struct WebState {
  explicit WebState(WebConfig c) : config(std::move(c)), auth(config.users) {}
  WebConfig config;
  BasicAuth auth;
};

/// Connections served at once: max_connections, but at most a quarter of the soft
/// RLIMIT_NOFILE, so connections can never take the descriptors the targets and sources need.
int connection_cap(int max_connections);

/// A text/plain response.
HttpResponse plain(int status, std::string body);

/// Shared by the connections. Lives as long as the server; the listener parts (pool, auth_pool,
/// table, cap) are set by HttpListener between its start and its stop.
struct ServerCore {
  HttpServerSettings settings;
  std::unordered_map<std::string, Route> routes;
  std::vector<std::pair<std::string, Route>> prefix_routes;  // "/api/v1/runs/" for ".../*"
  int cap = 0;                                               // connections (fd-capped)
  std::atomic<int> connections{0};
  std::atomic<std::size_t> body_bytes{0};
  std::atomic<std::size_t> released_since_trim{0};
  std::atomic<std::uint64_t> next_id{0};
  std::atomic<int> sessions{0};       // connection objects alive (handshakes included)
  std::atomic<int> sessions_peak{0};  // the most since the last trim check
  std::array<std::atomic<std::uint64_t>, static_cast<size_t>(Rejection::count_)> rejected{};
  std::unique_ptr<HandlerPool> pool;       // handlers
  std::unique_ptr<HandlerPool> auth_pool;  // password checks: never behind a slow handler
  std::unique_ptr<ConnectionTable> table;

  mutable std::mutex web_mutex;
  std::shared_ptr<const WebState> web;  // never null after start()

  void count(Rejection why) { ++rejected[static_cast<size_t>(why)]; }

  std::shared_ptr<const WebState> web_state() const {
    std::lock_guard<std::mutex> lock(web_mutex);
    return web;
  }

  /// The exact route for `path`, else the first prefix route it falls under; null for none.
  const Route* find_route(const std::string& path) const;

  /// How long a transfer of `bytes` may take: twice the request timeout, plus the bytes at the
  /// minimum rate.
  Clock::duration transfer_allowance(std::size_t bytes) const;

  /// Reserves `bytes` of the request body budget; false when it would exceed it.
  bool reserve_body(std::size_t bytes);
  void release_body(std::size_t bytes);
};

}  // namespace loadwatch::http_transport
