// civetweb behind an exact-path route table. No document_root is configured, so civetweb never
// serves files or directory listings, and every request is dispatched from civetweb's
// begin_request callback, before civetweb would look at handlers or the file system, so its
// directory-redirect path (CVE-2025-55763, a heap overflow in 1.14-1.16) is unreachable, and
// unknown paths get a plain 404.
//
// Slow and idle clients: civetweb 1.15 gives each connection a worker thread from the moment
// it is accepted until it closes; the master thread queues accepted sockets FIFO (20 deep, then
// the kernel's listen backlog) until a worker is free. Clients that connect and send nothing,
// or trickle a header, hold their worker until the header deadline (request_timeout_ms, for the
// whole head), and a scrape queued behind N of them waits about (N - workers) / workers header
// deadlines (measured: 14 s with 1,000 such connections, 320 workers and a 5 s deadline). So:
// - there is a worker per connection the server is meant to hold (max_connections, 1,200 by
//   default: 1,000 idle or slow clients leave room for scrapes), at ~19 KiB RSS each;
// - bodies and responses have whole-transfer deadlines (transfer_deadlines.h), since
//   civetweb's own timeout restarts with every byte;
// - the request limit (503) counts handlers only, so slow clients cannot fill it; request
//   bodies are bounded by route and in total (max_body_memory).
// Credentials are checked before the route, the body and the request limit, against a bcrypt
// queue that turns a flood away (basic_auth.h).
#include "web/http_server.h"

#include <civetweb.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include "config/config_error.h"
#include "web/basic_auth.h"
#include "web/tls_context.h"
#include "web/transfer_deadlines.h"
#include "web/web_config.h"

// src/web/tls_compat: referencing them keeps the libraries civetweb's TLS needs linked in.
extern "C" int loadwatch_ssl_compat(void);
extern "C" int loadwatch_crypto_compat(void);

namespace loadwatch {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// "HOST:PORT" / ":PORT" / "[::1]:PORT" → civetweb's listening_ports syntax.
std::string civetweb_ports(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos)
    throw std::runtime_error("listen address \"" + address + "\" is not HOST:PORT");
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (port.empty() || !std::all_of(port.begin(), port.end(), ::isdigit)) {
    throw std::runtime_error("listen address \"" + address + "\" has no valid port");
  }
  if (host.empty()) return (mg_check_feature(MG_FEATURES_IPV6) ? "+" : "") + port;
  if (host == "0.0.0.0") return port;
  if (host.front() == '[') return host + ":" + port;  // civetweb takes [::1]:PORT
  if (host == "localhost") host = "127.0.0.1";
  return host + ":" + port;
}

/// civetweb workers: one per connection served at once, but at most a quarter of the soft
/// RLIMIT_NOFILE, so connections can never take the descriptors the targets and sources need
/// (and civetweb's accept loop never spins on EMFILE).
int worker_count(int max_connections) {
  rlimit rl{};
  int cap = max_connections;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    cap = static_cast<int>(std::min<rlim_t>(rl.rlim_cur / 4, cap));
  }
  return std::max(cap, 4);
}

/// civetweb's ssl_protocol_version floor for a min_version (0 = SSLv2+ ... 5 = TLS 1.3 only);
/// the exact range is set again in the init_ssl callback, this keeps civetweb's own options in
/// agreement with it.
const char* civetweb_protocol_floor(TlsVersion min) {
  switch (min) {
    case TlsVersion::TLS10:
      return "2";
    case TlsVersion::TLS11:
      return "3";
    case TlsVersion::TLS12:
      return "4";
    case TlsVersion::TLS13:
      return "5";
  }
  return "4";
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

/// civetweb reports only "Failed to setup server ports"; bind the address ourselves to say why
/// (e.g. "Address already in use").
std::string bind_error(const std::string& address) {
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), address.substr(colon + 1).c_str(), &hints,
                  &res) != 0) {
    return "cannot resolve host \"" + host + "\"";
  }
  std::string why;
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0) why = std::strerror(errno);
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return why;
}

}  // namespace

std::string HttpRequest::query_param(const std::string& name) const {
  // civetweb finds the first `name=` and decodes its value ('+' and %XX); the decoded value is
  // never longer than the query.
  std::string value(query.size() + 1, '\0');
  const int n = mg_get_var(query.data(), query.size(), name.c_str(), value.data(), value.size());
  if (n < 0) return "";
  value.resize(static_cast<std::size_t>(n));
  return value;
}

std::vector<std::string> HttpRequest::query_params(const std::string& name) const {
  std::vector<std::string> out;
  std::string value(query.size() + 1, '\0');
  for (std::size_t i = 0; i < 32; ++i) {
    const int n =
        mg_get_var2(query.data(), query.size(), name.c_str(), value.data(), value.size(), i);
    if (n < 0) break;
    out.emplace_back(value.data(), static_cast<std::size_t>(n));
  }
  return out;
}

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

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

namespace {

/// Why a request was turned away (counted for HttpServer::stats()).
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
    case Rejection::count_:
      break;
  }
  return "?";
}

/// Gives back the pages of this thread's stack below the current frame. civetweb's workers keep
/// every stack page their deepest call ever touched (its error pages and a TLS handshake reach
/// 30-100 KiB down): at the end of each connection the idle worker returns to a few pages, so
/// max_connections workers cost ~19 KiB each, not up to their whole stack.
void trim_stack() {
  static const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  // Worker threads only: the main thread's stack is sized by RLIMIT_STACK, not mapped whole.
  if (gettid() == getpid()) return;
  thread_local std::uintptr_t low = 0, high = 0;
  if (low == 0) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    low = (reinterpret_cast<std::uintptr_t>(addr) + page - 1) & ~(page - 1);
    high = reinterpret_cast<std::uintptr_t>(addr) + size;
  }
  // The machine frame (a local's address is not: ASan may keep locals on a heap "fake stack").
  // Everything below it is dead; one page of margin covers the red zone.
  auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (frame <= low || frame >= high) return;
  std::uintptr_t top = (frame - page) & ~(page - 1);
  if (top > low + page) madvise(reinterpret_cast<void*>(low), top - low, MADV_DONTNEED);
}

/// Marks connections counted by init_connection (a failed TLS handshake closes one that was
/// never counted).
char counted_connection;

}  // namespace

struct HttpServer::Impl {
  HttpServerSettings settings;
  std::unordered_map<std::string, Route> routes;
  std::vector<std::pair<std::string, Route>> prefix_routes;  // "/api/v1/runs/" for ".../*"
  mg_context* ctx = nullptr;
  int workers = 0;                         // civetweb worker threads (max_connections, fd-capped)
  std::atomic<int> in_flight{0};           // handlers running
  std::atomic<int> connections{0};         // open connections (each holds a worker)
  std::atomic<std::size_t> body_bytes{0};  // request bodies reserved
  std::atomic<std::size_t> released_since_trim{0};  // body bytes freed since malloc_trim
  std::array<std::atomic<std::uint64_t>, static_cast<size_t>(Rejection::count_)> rejected{};
  std::unique_ptr<TransferDeadlines> deadlines = std::make_unique<TransferDeadlines>();

  void count(Rejection why) { ++rejected[static_cast<size_t>(why)]; }
  int bound_port = 0;  // kept across listener restarts (a :0 address keeps its port)

  mutable std::mutex web_mutex;
  std::shared_ptr<const WebState> web;            // never null after start()
  std::string web_stamp;                          // file_stamp of the web config file at last load
  std::string tls_stamp;                          // tls_files_stamp at last load
  const TlsServerConfig* starting_tls = nullptr;  // for the init_ssl callback, during mg_start

  std::shared_ptr<const WebState> web_state() const {
    std::lock_guard<std::mutex> lock(web_mutex);
    return web;
  }

  // Dispatching from begin_request (set before mg_start2) rather than mg_set_request_handler
  // (only possible after it) closes the window in which a fresh listener answered civetweb's own
  // 404 to an early scrape.
  static int dispatch(mg_connection* conn) {
    return static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)))->handle(conn);
  }

  /// civetweb's init_ssl callback: configure the SSL_CTX it made for the listener. Returning 1
  /// tells civetweb the certificate is set up (it then skips its own ssl_certificate handling).
  static int init_ssl(void* ssl_ctx, void* user_data) {
    auto* self = static_cast<Impl*>(user_data);
    try {
      configure_tls_context(ssl_ctx, *self->starting_tls);
      return 1;
    } catch (const std::exception& e) {
      spdlog::error("TLS setup failed: {}", e.what());
      return -1;
    }
  }

  using Clock = TransferDeadlines::Clock;

  /// How long a transfer of `bytes` may take: twice the request timeout (so a client that
  /// merely stops meets civetweb's own timeout, and its answer, first), plus the bytes at the
  /// minimum rate.
  Clock::duration transfer_allowance(std::size_t bytes) const {
    return std::chrono::milliseconds(2 * settings.request_timeout_ms) +
           std::chrono::milliseconds(bytes * 1000 /
                                     std::max<std::size_t>(1, settings.min_transfer_rate));
  }

  static TransferDeadlines::Peer peer_of(const mg_request_info* info) {
    return {info->remote_addr, info->remote_port, info->server_port};
  }

  void send(mg_connection* conn, const HttpResponse& r, const WebState* web) {
    const std::string& body = r.shared_body ? *r.shared_body : r.body;
    mg_response_header_start(conn, r.status);
    mg_response_header_add(conn, "Content-Type", r.content_type.c_str(), -1);
    mg_response_header_add(conn, "Content-Length", std::to_string(body.size()).c_str(), -1);
    for (const auto& [k, v] : r.headers) mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
    if (web) {
      for (const auto& [k, v] : web->config.headers) {
        mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
      }
    }
    const auto* info = mg_get_request_info(conn);
    auto watch = deadlines->watch(peer_of(info), Clock::now() + transfer_allowance(body.size()),
                                  TransferDeadlines::Direction::send);
    mg_response_header_send(conn);
    if (info->request_method && std::string_view(info->request_method) == "HEAD") return;
    // In pieces: civetweb returns from a write only when all of it went out.
    constexpr size_t kPiece = 64 * 1024;
    size_t off = 0;
    while (off < body.size() && !watch.expired()) {
      int n = mg_write(conn, body.data() + off, std::min(kPiece, body.size() - off));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    if (watch.expired()) count(Rejection::transfer_timeout);
  }

  static HttpResponse plain(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }

  /// Answers a request before (or instead of) reading its body; civetweb closes the
  /// connection afterwards when a body is left unread.
  int reject(mg_connection* conn, Rejection why, HttpResponse r, const WebState* web) {
    count(why);
    if (r.status == 429 || r.status == 503) r.headers.emplace_back("Retry-After", "1");
    send(conn, r, web);
    return r.status;
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

  /// Reads the request body into req.body within the route's cap, the body budget and the
  /// transfer deadline. Returns 0 on success, else the status already sent.
  int read_body(mg_connection* conn, const mg_request_info* info, HttpRequest& req,
                std::size_t limit, bool chunked, std::size_t& reserved, const WebState* web) {
    auto too_large = [&] {
      return reject(conn, Rejection::body_too_large,
                    plain(413, "request body larger than " + std::to_string(limit) + " bytes\n"),
                    web);
    };
    auto no_memory = [&] {
      return reject(
          conn, Rejection::body_memory,
          plain(503, "request bodies in progress hold more than " +
                         std::to_string(settings.max_body_memory) + " bytes; retry later\n"),
          web);
    };
    std::size_t expected = chunked ? 0 : static_cast<std::size_t>(info->content_length);
    if (expected > limit) return too_large();
    // A chunked body of unknown length grows its reservation as it arrives. A compressed body
    // may inflate in the handler up to the route's cap (the Influx routes stop there): the
    // reservation, held until the handler returns, covers that.
    std::size_t want = chunked ? std::min<std::size_t>(limit + 1, 64 * 1024) : expected;
    std::string encoding = lower(req.header("content-encoding"));
    if (!encoding.empty() && encoding != "identity") want = std::max(want, limit);
    if (!reserve_body(want)) return no_memory();
    reserved = want;
    req.body.reserve(chunked ? std::min<std::size_t>(want, 64 * 1024) : expected);
    auto started = Clock::now();
    auto watch =
        deadlines->watch(peer_of(info), started + transfer_allowance(chunked ? 0 : expected),
                         TransferDeadlines::Direction::receive);
    bool failed = false;
    for (;;) {
      std::size_t size = req.body.size();
      std::size_t room = chunked ? 16 * 1024 : std::min<std::size_t>(expected - size, 64 * 1024);
      if (!chunked && room == 0) break;
      if (size + room > reserved) {  // chunked only
        if (size >= limit + 1) {
          req.body.clear();
          return too_large();
        }
        std::size_t grow = std::min(reserved, limit + 1 - reserved);
        if (!reserve_body(grow)) return no_memory();
        reserved += grow;
        room = std::min(room, reserved - size);
      }
      if (size + room > req.body.capacity()) {  // grow within the reservation, not past it
        req.body.reserve(std::min(std::max(2 * req.body.capacity(), size + room), reserved));
      }
      req.body.resize(size + room);
      int n = mg_read(conn, req.body.data() + size, room);
      req.body.resize(size + static_cast<std::size_t>(std::max(n, 0)));
      if (n < 0 || watch.expired()) {
        failed = true;
        break;
      }
      if (n == 0) break;  // chunked: the last chunk; fixed length: the peer stopped sending
      // Fixed length: civetweb returns less than asked only once the peer closed or was silent
      // for request_timeout_ms, so the body is incomplete.
      if (!chunked && static_cast<std::size_t>(n) < room) break;
      if (chunked) watch.set_deadline(started + transfer_allowance(req.body.size()));
    }
    if (watch.expired()) {
      return reject(conn, Rejection::transfer_timeout,
                    plain(408, "request body arrived slower than " +
                                   std::to_string(settings.min_transfer_rate) + " bytes/s\n"),
                    web);
    }
    if (chunked && failed) {
      return reject(conn, Rejection::bad_framing, plain(400, "malformed chunked request body\n"),
                    web);
    }
    if (!chunked && req.body.size() != expected) {
      return reject(
          conn, Rejection::body_incomplete,
          plain(400, "request body ended after " + std::to_string(req.body.size()) + " of its " +
                         std::to_string(expected) + " bytes (Content-Length)\n"),
          web);
    }
    if (chunked && req.body.size() > limit) return too_large();
    return 0;
  }

  /// Rejects ambiguous framing (request smuggling material): Content-Length together with
  /// Transfer-Encoding, several differing Content-Lengths, or one that is not a plain number.
  static std::string framing_error(const mg_request_info* info, bool& chunked) {
    std::string length;
    bool has_length = false;
    int encodings = 0;
    chunked = false;
    for (int i = 0; i < info->num_headers; ++i) {
      std::string name = lower(info->http_headers[i].name);
      std::string value = info->http_headers[i].value ? info->http_headers[i].value : "";
      if (name == "transfer-encoding") {
        // civetweb answered 400 already when the first one is not chunked or identity, and
        // reads the body as the first one says.
        if (++encodings > 1) return "several Transfer-Encoding headers";
        if (lower(value) != "identity") chunked = true;
      } else if (name == "content-length") {
        if (value.empty() || value.size() > 18 ||
            !std::all_of(value.begin(), value.end(), ::isdigit)) {
          return "Content-Length \"" + value.substr(0, 40) + "\" is not a number";
        }
        if (has_length && value != length) return "differing Content-Length headers";
        has_length = true;
        length = value;
      }
    }
    if (chunked && has_length) return "both Transfer-Encoding and Content-Length";
    return "";
  }

  int handle(mg_connection* conn) {
    std::shared_ptr<const WebState> web = web_state();
    const mg_request_info* info = mg_get_request_info(conn);
    HttpRequest req;
    req.method = info->request_method ? info->request_method : "";
    req.path = info->local_uri ? info->local_uri : "";
    req.query = info->query_string ? info->query_string : "";
    req.client = info->remote_addr;
    for (int i = 0; i < info->num_headers; ++i) {
      req.headers[lower(info->http_headers[i].name)] = info->http_headers[i].value;
    }
    bool chunked = false;
    if (std::string why = framing_error(info, chunked); !why.empty()) {
      return reject(conn, Rejection::bad_framing, plain(400, why + "\n"), web.get());
    }
    // Credentials first, before anything is read or reserved for the request: every path
    // needs them, as with exporter-toolkit (a 404 would tell which exist).
    switch (web->auth.check(req.header("authorization"), req.client)) {
      case AuthResult::ok:
        break;
      case AuthResult::denied: {
        HttpResponse r = plain(401, "Unauthorized\n");
        r.headers.emplace_back("WWW-Authenticate", "Basic");
        return reject(conn, Rejection::unauthorized, r, web.get());
      }
      case AuthResult::busy:
        return reject(conn, Rejection::auth_busy,
                      plain(429, "too many password checks in progress; retry later\n"), web.get());
    }
    const Route* found = nullptr;
    if (auto it = routes.find(req.path); it != routes.end()) found = &it->second;
    for (const auto& [prefix, r] : prefix_routes) {
      if (!found && req.path.size() > prefix.size() && req.path.rfind(prefix, 0) == 0) found = &r;
    }
    if (!found) {
      send(conn, plain(404, "404 page not found\n"), web.get());
      return 404;
    }
    const Route& route = *found;
    bool has_body = chunked || info->content_length > 0;
    if (has_body && route.max_body == 0) {
      return reject(conn, Rejection::body_not_allowed,
                    plain(413, req.path + " takes no request body\n"), web.get());
    }
    std::size_t reserved = 0;
    struct Release {
      Impl& self;
      std::size_t& bytes;
      std::string& body;
      ~Release() {
        std::string().swap(body);  // free it before the trim in release_body
        self.release_body(bytes);
      }
    } release{*this, reserved, req.body};
    if (has_body) {
      if (int status = read_body(conn, info, req, route.max_body, chunked, reserved, web.get())) {
        return status;
      }
    }
    // The concurrency limit covers the handlers only: reading requests and writing responses
    // are bounded per connection (deadlines) and by max_connections.
    if (++in_flight > settings.max_requests) {
      --in_flight;
      return reject(conn, Rejection::too_many_requests,
                    plain(503, "too many concurrent requests\n"), web.get());
    }
    HttpResponse resp;
    try {
      resp = route.handler(req);
    } catch (const std::exception& e) {
      resp = plain(500, std::string("internal error: ") + e.what() + "\n");
    } catch (...) {
      resp = plain(500, "internal error\n");
    }
    --in_flight;  // before the response is written: a slow reader holds no request slot
    std::string().swap(req.body);
    release_body(std::exchange(reserved, 0));
    send(conn, resp, web.get());
    return resp.status;
  }

  /// Starts civetweb with this TLS config (plain HTTP when it is not enabled).
  void start_listener(const TlsServerConfig& tls);
  void stop_listener();
};

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
  static bool initialised = (mg_init_library(0), true);
  (void)initialised;
  WebConfig config;
  if (!impl_->settings.web_config_file.empty()) {
    impl_->web_stamp = file_stamp(impl_->settings.web_config_file);
    config = load_web_config(impl_->settings.web_config_file);  // throws ConfigError
    impl_->tls_stamp = tls_files_stamp(config.tls);
  }
  impl_->web = std::make_shared<const WebState>(std::move(config));
  impl_->start_listener(impl_->web->config.tls);
}

void HttpServer::Impl::start_listener(const TlsServerConfig& tls) {
  std::string address = settings.listen_address;
  if (bound_port) address = address.substr(0, address.rfind(':') + 1) + std::to_string(bound_port);
  std::string ports = civetweb_ports(address) + (tls.enabled() ? "s" : "");
  if (tls.enabled() && !(loadwatch_ssl_compat() && loadwatch_crypto_compat())) {
    throw std::runtime_error("TLS support libraries missing");
  }
  workers = worker_count(settings.max_connections);
  if (workers < settings.max_connections) {
    spdlog::warn(
        "serving at most {} HTTP connections at once instead of {}: the soft "
        "RLIMIT_NOFILE is {} (raise LimitNOFILE= or ulimit -n)",
        workers, settings.max_connections, workers * 4);
  }
  std::string threads = std::to_string(workers);
  std::string request_timeout = std::to_string(settings.request_timeout_ms);
  std::string keep_alive_timeout = std::to_string(settings.keep_alive_timeout_ms);
  std::string max_request = std::to_string(settings.max_header_bytes);
  std::vector<const char*> options = {
      "listening_ports",
      ports.c_str(),
      "num_threads",
      threads.c_str(),
      "request_timeout_ms",
      request_timeout.c_str(),
      "keep_alive_timeout_ms",
      keep_alive_timeout.c_str(),
      "enable_keep_alive",
      "yes",
      "max_request_size",
      max_request.c_str(),
      "listen_backlog",
      "1024",
      // Headers and body go out in separate writes: without TCP_NODELAY, Nagle holds the body
      // until the client's delayed ACK, 40 ms per response on a keep-alive connection.
      "tcp_nodelay",
      "1",
      // No document_root: no file serving. Listing off as well, belt and braces.
      "enable_directory_listing",
      "no",
  };
  if (tls.enabled()) {
    options.push_back("ssl_protocol_version");
    options.push_back(civetweb_protocol_floor(tls.min_version));
  }
  options.push_back(nullptr);
  mg_callbacks callbacks{};
  // civetweb's own messages (e.g. a failed TLS handshake) are noise at info level.
  callbacks.log_message = [](const mg_connection*, const char* message) {
    spdlog::debug("civetweb: {}", message);
    return 1;
  };
  callbacks.init_ssl = &Impl::init_ssl;
  callbacks.begin_request = &Impl::dispatch;
  callbacks.init_connection = [](const mg_connection* conn, void** conn_data) {
    ++static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)))->connections;
    *conn_data = &counted_connection;
    return 0;
  };
  callbacks.connection_close = [](const mg_connection* conn) {
    if (mg_get_user_connection_data(conn) == &counted_connection) {
      --static_cast<Impl*>(mg_get_user_data(mg_get_context(conn)))->connections;
    }
    trim_stack();
  };
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = this;
  init.configuration_options = options.data();
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof error_text};
  starting_tls = &tls;
  ctx = mg_start2(&init, &error);
  starting_tls = nullptr;
  if (!ctx) {
    std::string why = bind_error(address);
    if (why.empty()) why = error_text[0] ? error_text : "civetweb failed to start";
    throw std::runtime_error("cannot listen on " + address + ": " + why);
  }
  mg_server_port bound[4];
  if (mg_get_server_ports(ctx, 4, bound) > 0) bound_port = bound[0].port;
  spdlog::debug("listening on {} ({}, {} workers)", address, tls.enabled() ? "TLS" : "plain HTTP",
                threads);
}

bool HttpServer::reload_web_config(bool force) {
  Impl& im = *impl_;
  const std::string& path = im.settings.web_config_file;
  if (path.empty() || !im.web) return false;
  std::string web_stamp = file_stamp(path);
  std::shared_ptr<const WebState> current = im.web_state();
  std::string tls_stamp = tls_files_stamp(current->config.tls);
  if (!force && web_stamp == im.web_stamp && tls_stamp == im.tls_stamp && im.ctx) return false;
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
      config.tls != current->config.tls || tls_files_stamp(config.tls) != im.tls_stamp || !im.ctx;
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

namespace {
/// Opens and closes one TCP connection to the server's own port. civetweb's master thread sleeps
/// in poll() for up to 2 s (SOCKET_TIMEOUT_QUANTUM) before it notices mg_stop(); a connection
/// wakes it at once, so shutdown takes milliseconds.
void poke(const std::string& listen_address, int port) {
  std::string host = listen_address.substr(0, listen_address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return;
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd >= 0) {
    connect(fd, res->ai_addr, res->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(res);
}
}  // namespace

void HttpServer::stop() {
  if (impl_) impl_->stop_listener();
}

void HttpServer::Impl::stop_listener() {
  if (!ctx) return;
  int bound = bound_port;
  std::atomic<bool> done{false};
  mg_context* stopping = ctx;
  std::thread stopper([stopping, &done] {
    mg_stop(stopping);
    done = true;
  });
  for (int i = 0; i < 100 && !done; ++i) {
    poke(settings.listen_address, bound);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stopper.join();
  ctx = nullptr;
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats out;
  out.connections = impl_->connections.load();
  // Before start(): what start() would run with.
  out.max_connections =
      impl_->workers ? impl_->workers : worker_count(impl_->settings.max_connections);
  out.body_bytes = impl_->body_bytes.load();
  out.max_body_memory = impl_->settings.max_body_memory;
  for (size_t i = 0; i < impl_->rejected.size(); ++i) {
    out.rejected.emplace_back(rejection_name(static_cast<Rejection>(i)), impl_->rejected[i].load());
  }
  return out;
}

int HttpServer::port() const {
  if (!impl_->ctx) return 0;
  mg_server_port ports[4];
  int n = mg_get_server_ports(impl_->ctx, 4, ports);
  return n > 0 ? ports[0].port : 0;
}

}  // namespace loadwatch
