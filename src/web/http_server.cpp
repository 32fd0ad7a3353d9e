// civetweb behind an exact-path route table. No document_root is configured, so civetweb never
// serves files or directory listings, and every request is dispatched from civetweb's
// begin_request callback, before civetweb would look at handlers or the file system, so its
// directory-redirect path (CVE-2025-55763, a heap overflow in 1.14-1.16) is unreachable, and
// unknown paths get a plain 404.
//
// Idle connections: civetweb 1.15 gives each connection a worker thread from the moment it is
// accepted until it closes, so clients that connect and send nothing (or half a header) each
// hold a worker until request_timeout_ms. With a pool as small as the request limit, 300 such
// connections queue a scrape behind them for ceil(300 / workers) timeouts (measured: 50 s with
// 48 workers and a 10 s timeout). So the pool holds 300 idle connections with room to spare
// (kMinWorkers) and the header read timeout is short: the concurrency limit (503) is enforced on
// requests, not on connections. Each worker costs ~19 KiB RSS (stack pages, connection state,
// its request buffer): 320 workers are ~6 MiB, a third of the daemon.
#include "web/http_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "config.h"
#include "web/basic_auth.h"
#include "web/tls_context.h"
#include "web/web_config.h"

// src/tls_compat: referencing them keeps the libraries civetweb's TLS needs linked in.
extern "C" int loadwatch_ssl_compat(void);
extern "C" int loadwatch_crypto_compat(void);

namespace loadwatch {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string url_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < in.size() &&
               std::isxdigit(static_cast<unsigned char>(in[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

/// "HOST:PORT" / ":PORT" / "[::1]:PORT" → civetweb's listening_ports syntax.
std::string civetweb_ports(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("listen address \"" + address +
                                                           "\" is not HOST:PORT");
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

/// Workers beyond the request limit that absorb idle or slow connections (see the top): the 300
/// held connections the limits are specified for, plus room for the scrapes themselves.
constexpr int kMinWorkers = 320;

/// civetweb's ssl_protocol_version floor for a min_version (0 = SSLv2+ ... 5 = TLS 1.3 only);
/// the exact range is set again in the init_ssl callback, this keeps civetweb's own options in
/// agreement with it.
const char* civetweb_protocol_floor(TlsVersion min) {
  switch (min) {
    case TlsVersion::TLS10: return "2";
    case TlsVersion::TLS11: return "3";
    case TlsVersion::TLS12: return "4";
    case TlsVersion::TLS13: return "5";
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
  std::string_view q = query;
  while (!q.empty()) {
    auto amp = q.find('&');
    auto pair = q.substr(0, amp);
    auto eq = pair.find('=');
    if (url_decode(pair.substr(0, eq)) == name) {
      return eq == std::string_view::npos ? "" : url_decode(pair.substr(eq + 1));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return "";
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

struct HttpServer::Impl {
  HttpServerSettings settings;
  std::unordered_map<std::string, Route> routes;
  std::vector<std::pair<std::string, Route>> prefix_routes;  // "/api/v1/runs/" for ".../*"
  mg_context* ctx = nullptr;
  std::atomic<int> in_flight{0};
  int bound_port = 0;  // kept across listener restarts (a :0 address keeps its port)

  mutable std::mutex web_mutex;
  std::shared_ptr<const WebState> web;       // never null after start()
  std::string web_stamp;                     // file_stamp of the web config file at last load
  std::string tls_stamp;                     // tls_files_stamp at last load
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

  static void send(mg_connection* conn, const HttpResponse& r, const WebState* web) {
    mg_response_header_start(conn, r.status);
    mg_response_header_add(conn, "Content-Type", r.content_type.c_str(), -1);
    mg_response_header_add(conn, "Content-Length", std::to_string(r.body.size()).c_str(), -1);
    for (const auto& [k, v] : r.headers) mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
    if (web) {
      for (const auto& [k, v] : web->config.headers) {
        mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
      }
    }
    mg_response_header_send(conn);
    const auto* info = mg_get_request_info(conn);
    if (info->request_method && std::string_view(info->request_method) == "HEAD") return;
    size_t off = 0;
    while (off < r.body.size()) {
      int n = mg_write(conn, r.body.data() + off, r.body.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }

  static HttpResponse plain(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }

  int handle(mg_connection* conn) {
    struct Guard {
      std::atomic<int>& n;
      ~Guard() { --n; }
    } guard{in_flight};
    std::shared_ptr<const WebState> web = web_state();
    if (++in_flight > settings.max_requests) {
      send(conn, plain(503, "too many concurrent requests\n"), web.get());
      return 503;
    }
    const mg_request_info* info = mg_get_request_info(conn);
    HttpRequest req;
    req.method = info->request_method ? info->request_method : "";
    req.path = info->local_uri ? info->local_uri : "";
    req.query = info->query_string ? info->query_string : "";
    for (int i = 0; i < info->num_headers; ++i) {
      req.headers[lower(info->http_headers[i].name)] = info->http_headers[i].value;
    }
    // Every path needs credentials, as with exporter-toolkit (a 404 would tell which exist).
    if (web->auth.enabled() && !web->auth.check(req.header("authorization"))) {
      HttpResponse r = plain(401, "Unauthorized\n");
      r.headers.emplace_back("WWW-Authenticate", "Basic");
      send(conn, r, web.get());
      return 401;
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
    std::size_t limit = route.max_body ? route.max_body : settings.max_body_bytes;
    if (info->content_length > 0 && static_cast<std::size_t>(info->content_length) > limit) {
      mg_disable_connection_keep_alive(conn);  // the unread body makes the stream unusable
      send(conn, plain(413, "request body larger than " + std::to_string(limit) + " bytes\n"),
           web.get());
      return 413;
    }
    char buf[16384];
    for (;;) {
      int n = mg_read(conn, buf, sizeof buf);
      if (n <= 0) break;
      req.body.append(buf, static_cast<size_t>(n));
      if (req.body.size() > limit) {
        mg_disable_connection_keep_alive(conn);
        send(conn, plain(413, "request body larger than " + std::to_string(limit) + " bytes\n"),
             web.get());
        return 413;
      }
    }
    HttpResponse resp;
    try {
      resp = route.handler(req);
    } catch (const std::exception& e) {
      resp = plain(500, std::string("internal error: ") + e.what() + "\n");
    }
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
  std::string threads = std::to_string(std::max(kMinWorkers, settings.max_requests + 64));
  std::string request_timeout = std::to_string(settings.request_timeout_ms);
  std::string keep_alive_timeout = std::to_string(settings.keep_alive_timeout_ms);
  std::string max_request = std::to_string(settings.max_header_bytes);
  std::vector<const char*> options = {
      "listening_ports", ports.c_str(),
      "num_threads", threads.c_str(),
      "request_timeout_ms", request_timeout.c_str(),
      "keep_alive_timeout_ms", keep_alive_timeout.c_str(),
      "enable_keep_alive", "yes",
      "max_request_size", max_request.c_str(),
      "listen_backlog", "1024",
      // Headers and body go out in separate writes: without TCP_NODELAY, Nagle holds the body
      // until the client's delayed ACK, 40 ms per response on a keep-alive connection.
      "tcp_nodelay", "1",
      // No document_root: no file serving. Listing off as well, belt and braces.
      "enable_directory_listing", "no",
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
  bool restart = config.tls != current->config.tls || tls_files_stamp(config.tls) != im.tls_stamp ||
                 !im.ctx;
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
        spdlog::critical("web config reload: {}; not serving HTTP until the next reload", e2.what());
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

int HttpServer::port() const {
  if (!impl_->ctx) return 0;
  mg_server_port ports[4];
  int n = mg_get_server_ports(impl_->ctx, 4, ports);
  return n > 0 ? ports[0].port : 0;
}

}  // namespace loadwatch
