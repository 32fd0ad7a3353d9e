// Boost.Beast/Asio behind an exact-path route table (why this library: docs/architecture.md).
//
// Threads: `kIoThreads` run one epoll io_context for every connection (accepting, TLS,
// reading heads and bodies, writing responses); each connection is a strand with one timer, so
// an idle, slow or keep-alive connection costs its buffers (a few KiB), never a thread. What
// may block (handlers, bcrypt) runs on a HandlerPool and comes back to the strand to be written.
//
// Every wait has a deadline of the connection's own timer:
// - the TLS handshake and the whole head of the first request: request_timeout_ms from the
//   accept; later heads: keep_alive_timeout_ms for the first byte, then request_timeout_ms;
//   a connection that misses one is closed without an answer;
// - a body: no byte for request_timeout_ms (400), or slower than min_transfer_rate after
//   2 × request_timeout_ms (408); a response the same way (closed, counted).
// Fairness: a ConnectionTable gives each address a share of the connections (a full share or
// table closes a connection that only waits for a head, else turns the new one away), the pool
// a share of the handler slots (503), and a connection ends after kMaxRequestsPerConnection
// requests or kMaxConnectionAge, so keep-alive pins nothing.
// Credentials are checked before the route, the body and the request limit, against a bcrypt
// queue that turns a flood away (basic_auth.h). A framing error (Beast's parser refuses
// Content-Length with Transfer-Encoding, differing lengths, bad chunks) is a 400 that closes
// the connection (RFC 9112 section 6.1).
#include "web/http_server.h"

#include <malloc.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "config/config_error.h"
#include "web/basic_auth.h"
#include "web/connection_table.h"
#include "web/handler_pool.h"
#include "web/query_string.h"
#include "web/tls_context.h"
#include "web/web_config.h"

namespace loadwatch {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kIoThreads = 2;
constexpr int kPoolThreads = 4;
constexpr int kAuthThreads = 2;  // bcrypt runs one check at a time anyway (basic_auth.h)
/// A connection ends (Connection: close) after this many requests or this age.
constexpr int kMaxRequestsPerConnection = 1000;
constexpr auto kMaxConnectionAge = std::chrono::minutes(5);
/// After a response with Connection: close, what the client still sends is read and dropped
/// this long, so that closing with unread data (a TCP reset) does not destroy the response.
constexpr auto kLinger = std::chrono::seconds(1);
constexpr auto kTrimCheck = std::chrono::seconds(2);
constexpr int kTrimAfterDrop = 64;  // connections fewer than at the peak

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// Connections served at once: max_connections, but at most a quarter of the soft
/// RLIMIT_NOFILE, so connections can never take the descriptors the targets and sources need.
int connection_cap(int max_connections) {
  rlimit rl{};
  int cap = max_connections;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    cap = static_cast<int>(std::min<rlim_t>(rl.rlim_cur / 4, cap));
  }
  return std::max(cap, 4);
}

/// "HOST:PORT" / ":PORT" / "[::1]:PORT" → an endpoint (`port` overrides when not 0).
tcp::endpoint listen_endpoint(const std::string& address, int port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw std::runtime_error("listen address \"" + address + "\" is not HOST:PORT");
  }
  std::string host = address.substr(0, colon);
  std::string digits = address.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(), ::isdigit) || std::stoi(digits) > 65535) {
    throw std::runtime_error("listen address \"" + address + "\" has no valid port");
  }
  auto p = static_cast<unsigned short>(port ? port : std::stoi(digits));
  if (host.empty() || host == "0.0.0.0") return {asio::ip::address_v4::any(), p};
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") host = "127.0.0.1";
  beast::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (!ec) return {ip, p};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) {
    throw std::runtime_error("cannot listen on " + address + ": cannot resolve host \"" + host +
                             "\"");
  }
  tcp::endpoint out;
  out.resize(res->ai_addrlen);
  std::memcpy(out.data(), res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  out.port(p);
  return out;
}

/// Identity of a file's current content as far as stat() tells (inode, size, mtime): a
/// replaced or rewritten file gives another string.
std::string file_stamp(const std::string& path) {
  if (path.empty()) return "-";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + ":missing;";
  return path + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
}

std::string tls_files_stamp(const TlsServerConfig& tls) {
  if (!tls.enabled()) return "";
  return file_stamp(tls.cert_file) + file_stamp(tls.key_file) + file_stamp(tls.client_ca_file);
}

/// An OpenSSL server context configured from the web config (tls_context.cpp).
std::shared_ptr<asio::ssl::context> make_tls_context(const TlsServerConfig& tls) {
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (!raw) throw std::runtime_error("cannot create a TLS context");
  auto ctx = std::make_shared<asio::ssl::context>(raw);  // owns it from here
  SSL_CTX_set_options(raw, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  configure_tls_context(raw, tls);
  return ctx;
}

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
  address_connections,
  connections_full,
  count_
};

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

/// The reason phrase: Beast's, but the older RFC 2616 wording for two that clients know.
std::string reason_phrase(int status) {
  if (status == 408) return "Request Time-out";
  if (status == 413) return "Request Entity Too Large";
  auto text = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  return text == "<unknown-status>" ? "Unknown" : std::string(text);
}

HttpResponse plain(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

std::string HttpRequest::query_param(const std::string& name) const {
  auto values = query_values(query, name, 1);
  return values.empty() ? "" : values.front();
}

std::vector<std::string> HttpRequest::query_params(const std::string& name) const {
  return query_values(query, name, 32);
}

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

namespace {

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

/// What the connections share: settings, routes, limits and counters. Lives as long as the
/// server; the listener parts (io, pool, table) only between start and stop.
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

  const Route* find_route(const std::string& path) const {
    if (auto it = routes.find(path); it != routes.end()) return &it->second;
    for (const auto& [prefix, r] : prefix_routes) {
      if (path.size() > prefix.size() && path.rfind(prefix, 0) == 0) return &r;
    }
    return nullptr;
  }

  /// How long a transfer of `bytes` may take: twice the request timeout, plus the bytes at the
  /// minimum rate.
  Clock::duration transfer_allowance(std::size_t bytes) const {
    return std::chrono::milliseconds(2 * settings.request_timeout_ms) +
           std::chrono::milliseconds(bytes * 1000 /
                                     std::max<std::size_t>(1, settings.min_transfer_rate));
  }

  /// Reserves `bytes` of the request body budget; false when it would exceed it.
  bool reserve_body(std::size_t bytes) {
    std::size_t used = body_bytes.load();
    do {
      if (used + bytes > settings.max_body_memory) return false;
    } while (!body_bytes.compare_exchange_weak(used, used + bytes));
    return true;
  }

  void release_body(std::size_t bytes) {
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
};

/// One connection, plain (tcp::socket) or TLS. Every member is used on the connection's strand
/// only, but for `waiting` (ConnectionTable).
template <class Stream>
class Session final : public ConnectionTable::Member,
                      public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;
  using Parser = http::request_parser<http::string_body>;

 public:
  template <class... StreamArgs>
  Session(ServerCore& core, std::string peer, StreamArgs&&... args)
      : core_(core),
        stream_(std::forward<StreamArgs>(args)...),
        timer_(stream_.get_executor()),
        peer_(std::move(peer)),
        id_(++core.next_id) {
    int now = ++core.sessions;
    int peak = core.sessions_peak.load();
    while (now > peak && !core.sessions_peak.compare_exchange_weak(peak, now)) {
    }
  }

  ~Session() override {
    --core_.sessions;
    if (counted_) --core_.connections;  // never closed: the listener stopped
    core_.release_body(std::exchange(reserved_, 0));
    core_.table->leave(peer_, id_);
  }

  std::uint64_t id() const { return id_; }
  const std::string& peer() const { return peer_; }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->arm(self->opened_ + std::chrono::milliseconds(self->core_.settings.request_timeout_ms));
      if constexpr (kTls) {
        self->stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec || self->timed_out_) return self->close_now();
          self->opened();
          self->read_head();
        });
      } else {
        self->opened();
        self->read_head();
      }
    });
  }

  void evict() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->close_now(); });
  }

 private:
  tcp::socket& socket() {
    if constexpr (kTls) {
      return stream_.next_layer();
    } else {
      return stream_;
    }
  }
  const HttpServerSettings& settings() const { return core_.settings; }

  void opened() {
    counted_ = true;
    ++core_.connections;
  }

  /// The one deadline of whatever the connection waits for now: when it passes, the pending
  /// operation is cancelled and sees timed_out_.
  void arm(Clock::time_point deadline) {
    timed_out_ = false;
    timer_.expires_at(deadline);
    timer_.async_wait([self = this->shared_from_this(), gen = ++timer_gen_](beast::error_code ec) {
      if (ec || gen != self->timer_gen_ || self->closed_) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket().cancel(ignored);
    });
  }

  void read_head() {
    waiting = true;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(
        settings().max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());  // per route, once routed
    if (requests_ > 0) {
      if (buffer_.size() == 0) return wait_for_first_byte();
      arm(Clock::now() + std::chrono::milliseconds(settings().request_timeout_ms));
    }
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              self->on_head(ec);
                            });
  }

  /// Between keep-alive requests: keep_alive_timeout_ms for the next request to start, then
  /// request_timeout_ms from its first byte for the whole head.
  void wait_for_first_byte() {
    arm(Clock::now() + std::chrono::milliseconds(settings().keep_alive_timeout_ms));
    stream_.async_read_some(buffer_.prepare(1024), [self = this->shared_from_this()](
                                                       beast::error_code ec, std::size_t n) {
      if (ec || self->timed_out_ || n == 0) return self->close_now();
      self->buffer_.commit(n);
      self->arm(Clock::now() + std::chrono::milliseconds(self->core_.settings.request_timeout_ms));
      http::async_read_header(self->stream_, self->buffer_, *self->parser_,
                              [self](beast::error_code ec2, std::size_t) { self->on_head(ec2); });
    });
  }

  void on_head(beast::error_code ec) {
    if (closed_) return;
    if (timed_out_ || ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::operation_aborted || ec == http::error::partial_message ||
        (ec && ec.category() != http::make_error_code(http::error::bad_method).category())) {
      return close_now();  // silent, trickling, gone, or a transport error: no answer
    }
    waiting = false;
    ++requests_;
    auto web = core_.web_state();
    if (ec == http::error::header_limit) {
      return reject(Rejection::header_too_large,
                    plain(400, "request line and headers longer than " +
                                   std::to_string(settings().max_header_bytes) + " bytes\n"),
                    *web, true);
    }
    if (ec == http::error::bad_content_length || ec == http::error::bad_transfer_encoding ||
        ec == http::error::multiple_content_length) {
      return reject(Rejection::bad_framing,
                    plain(400,
                          "ambiguous request body framing (Content-Length, "
                          "Transfer-Encoding)\n"),
                    *web, true);
    }
    if (ec) {
      return reject(Rejection::bad_request, plain(400, "malformed request: " + ec.message() + "\n"),
                    *web, true);
    }
    const auto& head = parser_->get();
    req_ = HttpRequest();
    req_.method = std::string(head.method_string());
    std::string_view target = head.target();
    auto q = target.find('?');
    req_.path = url_decode(target.substr(0, q), false);
    if (q != std::string_view::npos) req_.query = std::string(target.substr(q + 1));
    req_.client = peer_;
    bool transfer_encoding = false;
    for (const auto& field : head) {
      std::string name = lower(std::string(field.name_string()));
      if (name == "transfer-encoding") transfer_encoding = true;
      req_.headers[name] = std::string(field.value());
    }
    chunked_ = parser_->chunked();
    if (transfer_encoding && !chunked_) {  // Beast would read such a body as the next request
      return reject(Rejection::bad_framing, plain(400, "Transfer-Encoding other than chunked\n"),
                    *web, true);
    }
    if (target.empty() || target.front() != '/') {
      return respond(plain(404, "404 page not found\n"), *web, true);
    }
    web_ = web;
    if (auto known = web->auth.check_without_bcrypt(req_.header("authorization"))) {
      return after_auth(*known);  // no users, or a cached login: a hash lookup
    }
    // bcrypt may take a while, and waits its turn: off the I/O threads. A flood is turned away
    // here, with the bcrypt queue's per-address share, instead of queueing for the threads.
    if (core_.auth_pool->take_slot(peer_) != HandlerPool::Slot::taken) {
      return after_auth(AuthResult::busy);
    }
    core_.auth_pool->submit(peer_, [self = this->shared_from_this()] {
      AuthResult result = AuthResult::denied;
      try {
        result = self->web_->auth.check(self->req_.header("authorization"), self->peer_);
      } catch (const std::exception& e) {
        spdlog::error("basic auth check failed: {}", e.what());
      }
      self->core_.auth_pool->give_back_slot(self->peer_);
      asio::post(self->stream_.get_executor(), [self, result] { self->after_auth(result); });
    });
  }

  bool has_body() const {
    return chunked_ || (parser_->content_length() && *parser_->content_length() > 0);
  }

  void after_auth(AuthResult result) {
    if (closed_) return;
    const WebState& web = *web_;
    // Credentials first, before anything is read or reserved for the request: every path
    // needs them, as with exporter-toolkit (a 404 would tell which exist).
    if (result == AuthResult::denied) {
      HttpResponse r = plain(401, "Unauthorized\n");
      r.headers.emplace_back("WWW-Authenticate", "Basic");
      return reject(Rejection::unauthorized, std::move(r), web, has_body());
    }
    if (result == AuthResult::busy) {
      return reject(Rejection::auth_busy,
                    plain(429, "too many password checks in progress; retry later\n"), web,
                    has_body());
    }
    route_ = core_.find_route(req_.path);
    if (!route_) return respond(plain(404, "404 page not found\n"), web, has_body());
    if (!has_body()) return run_handler();
    const std::size_t limit = route_->max_body;
    if (limit == 0) {
      return reject(Rejection::body_not_allowed, plain(413, req_.path + " takes no request body\n"),
                    web, true);
    }
    expected_ = chunked_ ? 0 : static_cast<std::size_t>(*parser_->content_length());
    if (expected_ > limit) return too_large();
    // A chunked body of unknown length grows its reservation as it arrives. A compressed body
    // may inflate in the handler up to the route's cap (the Influx routes stop there): the
    // reservation, held until the handler returns, covers that.
    std::size_t want = chunked_ ? std::min<std::size_t>(limit + 1, 64 * 1024) : expected_;
    std::string encoding = lower(req_.header("content-encoding"));
    if (!encoding.empty() && encoding != "identity") want = std::max(want, limit);
    if (!core_.reserve_body(want)) {
      return reject(
          Rejection::body_memory,
          plain(503, "request bodies in progress hold more than " +
                         std::to_string(settings().max_body_memory) + " bytes; retry later\n"),
          web, true);
    }
    reserved_ = want;
    parser_->body_limit(limit);
    body_started_ = Clock::now();
    if (lower(req_.header("expect")) == "100-continue") {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      arm(Clock::now() + core_.transfer_allowance(0));
      return asio::async_write(
          stream_, asio::buffer(kContinue),
          [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec || self->timed_out_) return self->close_now();
            self->read_body();
          });
    }
    read_body();
  }

  void too_large() {
    reject(Rejection::body_too_large,
           plain(413, "request body larger than " + std::to_string(route_->max_body) + " bytes\n"),
           *web_, true);
  }

  /// Reads some of the body: request_timeout_ms without a byte ends it (400), and so does the
  /// transfer deadline (408).
  void read_body() {
    std::size_t so_far = chunked_ ? parser_->get().body().size() : expected_;
    transfer_deadline_ = body_started_ + core_.transfer_allowance(so_far);
    arm(std::min(transfer_deadline_,
                 Clock::now() + std::chrono::milliseconds(settings().request_timeout_ms)));
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                            self->on_body(ec);
                          });
  }

  void on_body(beast::error_code ec) {
    if (closed_) return;
    const WebState& web = *web_;
    std::size_t size = parser_->get().body().size();
    if (timed_out_ && Clock::now() >= transfer_deadline_) {
      return reject(Rejection::transfer_timeout,
                    plain(408, "request body arrived slower than " +
                                   std::to_string(settings().min_transfer_rate) + " bytes/s\n"),
                    web, true);
    }
    if (ec == http::error::body_limit) return too_large();
    if (timed_out_ || ec == http::error::partial_message || ec == http::error::end_of_stream ||
        ec == asio::error::eof) {
      if (chunked_) {
        return reject(Rejection::bad_framing, plain(400, "malformed chunked request body\n"), web,
                      true);
      }
      return reject(Rejection::body_incomplete,
                    plain(400, "request body ended after " + std::to_string(size) + " of its " +
                                   std::to_string(expected_) + " bytes (Content-Length)\n"),
                    web, true);
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_chunk).category()) {
      return reject(Rejection::bad_framing, plain(400, "malformed chunked request body\n"), web,
                    true);
    }
    if (ec) return close_now();
    if (chunked_ && size > reserved_) {  // grows within the route's cap
      std::size_t grow = std::max(size - reserved_, std::min(reserved_, route_->max_body + 1));
      if (!core_.reserve_body(grow)) {
        return reject(
            Rejection::body_memory,
            plain(503, "request bodies in progress hold more than " +
                           std::to_string(settings().max_body_memory) + " bytes; retry later\n"),
            web, true);
      }
      reserved_ += grow;
    }
    if (!parser_->is_done()) return read_body();
    run_handler();
  }

  void run_handler() {
    const WebState& web = *web_;
    switch (core_.pool->take_slot(peer_)) {
      case HandlerPool::Slot::taken:
        break;
      case HandlerPool::Slot::full:
        return reject(Rejection::too_many_requests, plain(503, "too many concurrent requests\n"),
                      web, false);
      case HandlerPool::Slot::address_full:
        return reject(Rejection::address_requests,
                      plain(503, "too many concurrent requests from " + peer_ + "\n"), web, false);
    }
    req_.body = std::move(parser_->get().body());
    arm(Clock::time_point::max());  // the handler's time is its own
    core_.pool->submit(peer_, [self = this->shared_from_this()] {
      HttpResponse resp;
      try {
        resp = self->route_->handler(self->req_);
      } catch (const std::exception& e) {
        resp = plain(500, std::string("internal error: ") + e.what() + "\n");
      } catch (...) {
        resp = plain(500, "internal error\n");
      }
      // Before the response is written: a slow reader holds no request slot or body memory.
      self->core_.pool->give_back_slot(self->peer_);
      std::string().swap(self->req_.body);
      self->core_.release_body(std::exchange(self->reserved_, 0));
      asio::post(self->stream_.get_executor(), [self, resp = std::move(resp)]() mutable {
        if (!self->closed_) self->respond(std::move(resp), *self->web_, false);
      });
    });
  }

  void reject(Rejection why, HttpResponse r, const WebState& web, bool close) {
    core_.count(why);
    if (r.status == 429 || r.status == 503) r.headers.emplace_back("Retry-After", "1");
    respond(std::move(r), web, close);
  }

  /// Writes the response; `close`: the connection ends after it (a body left unread, a
  /// framing error).
  void respond(HttpResponse r, const WebState& web, bool close) {
    out_ = std::move(r);
    const std::string& body = out_.shared_body ? *out_.shared_body : out_.body;
    const auto& head = parser_->get();
    keep_ = !close && head.keep_alive() && requests_ < kMaxRequestsPerConnection &&
            Clock::now() - opened_ < kMaxConnectionAge;
    head_out_ = "HTTP/1.1 " + std::to_string(out_.status) + " " + reason_phrase(out_.status) +
                "\r\nContent-Type: " + out_.content_type +
                "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    for (const auto& [k, v] : out_.headers) head_out_ += k + ": " + v + "\r\n";
    for (const auto& [k, v] : web.config.headers) head_out_ += k + ": " + v + "\r\n";
    if (!keep_) {
      head_out_ += "Connection: close\r\n";
    } else if (head.version() < 11) {
      head_out_ += "Connection: keep-alive\r\n";
    }
    head_out_ += "\r\n";
    std::array<asio::const_buffer, 2> buffers{asio::buffer(head_out_), asio::const_buffer()};
    if (head.method() != http::verb::head) buffers[1] = asio::buffer(body);
    arm(Clock::now() + core_.transfer_allowance(body.size()));
    asio::async_write(stream_, buffers,
                      [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                        self->on_written(ec);
                      });
  }

  void on_written(beast::error_code ec) {
    if (closed_) return;
    out_ = HttpResponse();
    if (ec || timed_out_) {
      bool late = timed_out_;
      close_now();
      if (late) core_.count(Rejection::transfer_timeout);
      return;
    }
    if (keep_) return read_head();
    linger();
  }

  /// Half-closes, then reads and drops what the client still sends for up to kLinger.
  void linger() {
    beast::error_code ignored;
    socket().shutdown(tcp::socket::shutdown_send, ignored);
    waiting = true;
    arm(Clock::now() + kLinger);
    drain();
  }

  void drain() {
    socket().async_read_some(asio::buffer(scratch_),
                             [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec || self->timed_out_ || self->closed_) {
                                 return self->close_now();
                               }
                               self->drain();
                             });
  }

  void close_now() {
    if (closed_) return;
    closed_ = true;
    if (std::exchange(counted_, false)) --core_.connections;  // before anything is counted
    timer_.cancel();
    beast::error_code ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
  }

  ServerCore& core_;
  Stream stream_;
  asio::steady_timer timer_;
  std::string peer_;
  std::uint64_t id_;
  Clock::time_point opened_ = Clock::now();
  std::uint64_t timer_gen_ = 0;
  bool timed_out_ = false;
  bool closed_ = false;
  bool counted_ = false;
  bool keep_ = false;
  int requests_ = 0;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::shared_ptr<const WebState> web_;
  HttpRequest req_;
  const Route* route_ = nullptr;
  bool chunked_ = false;
  std::size_t expected_ = 0;
  std::size_t reserved_ = 0;
  Clock::time_point body_started_;
  Clock::time_point transfer_deadline_;
  HttpResponse out_;
  std::string head_out_;
  std::array<char, 4096> scratch_{};
};

}  // namespace

struct HttpServer::Impl : ServerCore {
  std::unique_ptr<asio::io_context> io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> accept_retry;
  std::unique_ptr<asio::steady_timer> trim_timer;
  std::vector<std::thread> io_threads;
  std::shared_ptr<asio::ssl::context> tls;  // null: plain HTTP
  int bound_port = 0;                       // kept across listener restarts (":0" keeps its port)
  std::string web_stamp;                    // file_stamp of the web config file at last load
  std::string tls_stamp;                    // tls_files_stamp at last load

  void accept();
  /// After a flood (TLS handshakes above all), glibc's arenas keep the freed connection memory:
  /// every kTrimCheck, give it back once the connections are far fewer than at their peak.
  void trim_after_floods();
  void admit(tcp::socket socket);
  /// Starts serving with this TLS config (plain HTTP when it is not enabled).
  void start_listener(const TlsServerConfig& tls_config);
  void stop_listener();
};

void HttpServer::Impl::accept() {
  acceptor->async_accept(asio::make_strand(*io), [this](beast::error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      admit(std::move(s));
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // EMFILE: the pending connection stays queued; try again shortly instead of spinning.
      accept_retry->expires_after(std::chrono::milliseconds(50));
      accept_retry->async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    accept();
  });
}

void HttpServer::Impl::trim_after_floods() {
  trim_timer->expires_after(kTrimCheck);
  trim_timer->async_wait([this](beast::error_code ec) {
    if (ec) return;
    int now = sessions.load();
    if (sessions_peak.exchange(now) - now >= kTrimAfterDrop) malloc_trim(0);
    trim_after_floods();
  });
}

void HttpServer::Impl::admit(tcp::socket socket) {
  beast::error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  auto address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  socket.set_option(tcp::no_delay(true), ec);
  std::shared_ptr<ConnectionTable::Member> member;
  auto start = [&](auto session) {
    member = session;
    switch (table->admit(session->peer(), session->id(), member)) {
      case ConnectionTable::Admission::admitted:
        break;
      case ConnectionTable::Admission::admitted_evicting_own:
        count(Rejection::address_connections);
        break;
      case ConnectionTable::Admission::admitted_evicting_other:
        count(Rejection::connections_full);
        break;
      case ConnectionTable::Admission::refused_address:
        count(Rejection::address_connections);
        return;  // closed as the session goes
      case ConnectionTable::Admission::refused_full:
        count(Rejection::connections_full);
        return;
    }
    session->start();
  };
  if (tls) {
    start(std::make_shared<Session<asio::ssl::stream<tcp::socket>>>(*this, address.to_string(),
                                                                    std::move(socket), *tls));
  } else {
    start(std::make_shared<Session<tcp::socket>>(*this, address.to_string(), std::move(socket)));
  }
}

HttpServer::HttpServer(HttpServerSettings settings) : impl_(std::make_unique<Impl>()) {
  impl_->settings = std::move(settings);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(const std::string& path, HttpHandler handler, std::size_t max_body) {
  if (path.size() > 1 && path.back() == '*') {
    impl_->prefix_routes.emplace_back(path.substr(0, path.size() - 1),
                                      Route{std::move(handler), max_body});
    return;
  }
  impl_->routes[path] = Route{std::move(handler), max_body};
}

void HttpServer::start() {
  WebConfig config;
  if (!impl_->settings.web_config_file.empty()) {
    impl_->web_stamp = file_stamp(impl_->settings.web_config_file);
    config = load_web_config(impl_->settings.web_config_file);  // throws ConfigError
    impl_->tls_stamp = tls_files_stamp(config.tls);
  }
  impl_->web = std::make_shared<const WebState>(std::move(config));
  impl_->start_listener(impl_->web->config.tls);
}

void HttpServer::Impl::start_listener(const TlsServerConfig& tls_config) {
  const std::string& address = settings.listen_address;
  tcp::endpoint where = listen_endpoint(address, bound_port);
  std::shared_ptr<asio::ssl::context> next_tls;
  if (tls_config.enabled()) next_tls = make_tls_context(tls_config);  // throws with the reason
  cap = connection_cap(settings.max_connections);
  if (cap < settings.max_connections) {
    spdlog::warn(
        "serving at most {} HTTP connections at once instead of {}: the soft "
        "RLIMIT_NOFILE is {} (raise LimitNOFILE= or ulimit -n)",
        cap, settings.max_connections, cap * 4);
  }
  auto ctx = std::make_unique<asio::io_context>(kIoThreads);
  auto acc = std::make_unique<tcp::acceptor>(*ctx);
  beast::error_code ec;
  acc->open(where.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && where.address().is_v6()) acc->set_option(asio::ip::v6_only(true), ec);
  if (!ec) acc->bind(where, ec);
  if (!ec) acc->listen(1024, ec);
  if (ec) throw std::runtime_error("cannot listen on " + address + ": " + ec.message());
  bound_port = acc->local_endpoint().port();
  tls = std::move(next_tls);
  const int per_address = std::max(1, settings.max_connections_per_address);
  table = std::make_unique<ConnectionTable>(static_cast<std::size_t>(cap),
                                            static_cast<std::size_t>(per_address));
  const int slots = std::max(1, settings.max_requests);
  pool = std::make_unique<HandlerPool>(std::min(kPoolThreads, slots), slots,
                                       std::max(std::min(2, slots), slots / 4));
  // Twice bcrypt's own share per address: logins of one client that arrive together wait for
  // the first one's result (then cached) instead of getting 429; room for 8 such addresses.
  auth_pool = std::make_unique<HandlerPool>(kAuthThreads, 4 * BasicAuth::kMaxWaiting,
                                            2 * BasicAuth::kMaxWaitingPerClient);
  io = std::move(ctx);
  acceptor = std::move(acc);
  accept_retry = std::make_unique<asio::steady_timer>(*io);
  trim_timer = std::make_unique<asio::steady_timer>(*io);
  accept();
  trim_after_floods();
  for (int i = 0; i < kIoThreads; ++i) {
    io_threads.emplace_back([this] {
      for (;;) {
        try {
          io->run();
          return;
        } catch (const std::exception& e) {  // a bug in a handler: log it, keep serving
          spdlog::error("HTTP I/O thread: {}", e.what());
        }
      }
    });
  }
  spdlog::debug("listening on {} ({}, {} I/O threads)", address, tls ? "TLS" : "plain HTTP",
                kIoThreads);
}

void HttpServer::Impl::stop_listener() {
  if (!io) return;
  asio::post(*io, [this] {
    beast::error_code ignored;
    acceptor->close(ignored);
    accept_retry->cancel();
    trim_timer->cancel();
  });
  pool->stop();  // waits for the running handlers; their responses are dropped below
  auth_pool->stop();
  io->stop();
  for (auto& t : io_threads) t.join();
  io_threads.clear();
  accept_retry.reset();
  trim_timer.reset();
  acceptor.reset();
  io.reset();  // destroys the connections still open
  pool.reset();
  auth_pool.reset();
  table.reset();
  tls.reset();
}

bool HttpServer::reload_web_config(bool force) {
  Impl& im = *impl_;
  const std::string& path = im.settings.web_config_file;
  if (path.empty() || !im.web) return false;
  std::string web_stamp = file_stamp(path);
  std::shared_ptr<const WebState> current = im.web_state();
  std::string tls_stamp = tls_files_stamp(current->config.tls);
  if (!force && web_stamp == im.web_stamp && tls_stamp == im.tls_stamp && im.io) return false;
  im.web_stamp = web_stamp;
  WebConfig config;
  try {
    config = load_web_config(path);
  } catch (const std::exception& e) {
    im.tls_stamp = tls_stamp;  // do not retry (and log) every tick until something changes
    spdlog::error("web config reload rejected, keeping the running one: {}", e.what());
    return false;
  }
  bool restart =
      config.tls != current->config.tls || tls_files_stamp(config.tls) != im.tls_stamp || !im.io;
  im.tls_stamp = tls_files_stamp(config.tls);
  auto next = std::make_shared<const WebState>(std::move(config));
  if (restart) {
    stop();
    try {
      im.start_listener(next->config.tls);
    } catch (const std::exception& e) {
      spdlog::error("web config reload: {}; restarting with the previous TLS settings", e.what());
      try {
        im.start_listener(current->config.tls);
      } catch (const std::exception& e2) {
        spdlog::critical("web config reload: {}; not serving HTTP until the next reload",
                         e2.what());
        im.tls_stamp.clear();  // retried on the next call
      }
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> lock(im.web_mutex);
    im.web = next;
  }
  spdlog::info("web config {} reloaded ({}, {} basic-auth users{})", path,
               next->config.tls.enabled() ? "TLS" : "plain HTTP", next->config.users.size(),
               restart ? ", listener restarted" : "");
  return true;
}

void HttpServer::stop() {
  if (impl_) impl_->stop_listener();
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats out;
  out.connections = impl_->connections.load();
  // Before start(): what start() would run with.
  out.max_connections = impl_->cap ? impl_->cap : connection_cap(impl_->settings.max_connections);
  out.body_bytes = impl_->body_bytes.load();
  out.max_body_memory = impl_->settings.max_body_memory;
  for (size_t i = 0; i < impl_->rejected.size(); ++i) {
    out.rejected.emplace_back(rejection_name(static_cast<Rejection>(i)), impl_->rejected[i].load());
  }
  return out;
}

int HttpServer::port() const { return impl_->io ? impl_->bound_port : 0; }

}  // namespace loadwatch
