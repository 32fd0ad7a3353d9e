// civetweb behind an exact-path route table. No document_root is configured, so civetweb never
// serves files or directory listings (its directory-redirect path is unreachable): every request
// lands in our catch-all handler, and unknown paths get a plain 404.
#include "http_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <stdexcept>
#include <thread>
#include <unordered_map>

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

struct HttpServer::Impl {
  HttpServerSettings settings;
  std::unordered_map<std::string, Route> routes;
  mg_context* ctx = nullptr;
  std::atomic<int> in_flight{0};

  static int dispatch(mg_connection* conn, void* cbdata) {
    return static_cast<Impl*>(cbdata)->handle(conn);
  }

  static void send(mg_connection* conn, const HttpResponse& r) {
    mg_response_header_start(conn, r.status);
    mg_response_header_add(conn, "Content-Type", r.content_type.c_str(), -1);
    mg_response_header_add(conn, "Content-Length", std::to_string(r.body.size()).c_str(), -1);
    for (const auto& [k, v] : r.headers) mg_response_header_add(conn, k.c_str(), v.c_str(), -1);
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
    if (++in_flight > settings.max_requests) {
      send(conn, plain(503, "too many concurrent requests\n"));
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
    auto it = routes.find(req.path);
    if (it == routes.end()) {
      send(conn, plain(404, "404 page not found\n"));
      return 404;
    }
    const Route& route = it->second;
    std::size_t limit = route.max_body ? route.max_body : settings.max_body_bytes;
    if (info->content_length > 0 && static_cast<std::size_t>(info->content_length) > limit) {
      send(conn, plain(413, "request body larger than " + std::to_string(limit) + " bytes\n"));
      return 413;
    }
    char buf[16384];
    for (;;) {
      int n = mg_read(conn, buf, sizeof buf);
      if (n <= 0) break;
      req.body.append(buf, static_cast<size_t>(n));
      if (req.body.size() > limit) {
        send(conn, plain(413, "request body larger than " + std::to_string(limit) + " bytes\n"));
        return 413;
      }
    }
    HttpResponse resp;
    try {
      resp = route.handler(req);
    } catch (const std::exception& e) {
      resp = plain(500, std::string("internal error: ") + e.what() + "\n");
    }
    send(conn, resp);
    return resp.status;
  }
};

HttpServer::HttpServer(HttpServerSettings settings) : impl_(std::make_unique<Impl>()) {
  impl_->settings = std::move(settings);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(const std::string& path, HttpHandler handler, std::size_t max_body) {
  impl_->routes[path] = Route{std::move(handler), max_body};
}

void HttpServer::start() {
  static bool initialised = (mg_init_library(0), true);
  (void)initialised;
  std::string ports = civetweb_ports(impl_->settings.listen_address);
  // More worker threads than the concurrency limit, so requests past it get a quick 503
  // instead of queueing behind idle keep-alive connections.
  std::string threads = std::to_string(impl_->settings.max_requests + 8);
  const char* options[] = {"listening_ports",
                           ports.c_str(),
                           "num_threads",
                           threads.c_str(),
                           "request_timeout_ms",
                           "10000",
                           "keep_alive_timeout_ms",
                           "30000",
                           "enable_keep_alive",
                           "yes",
                           "max_request_size",
                           "16384",
                           nullptr};
  mg_callbacks callbacks{};
  // civetweb logs through this; we report errors through mg_start2's error text instead.
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = impl_.get();
  init.configuration_options = options;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof error_text};
  impl_->ctx = mg_start2(&init, &error);
  if (!impl_->ctx) {
    std::string why = bind_error(impl_->settings.listen_address);
    if (why.empty()) why = error_text[0] ? error_text : "civetweb failed to start";
    throw std::runtime_error("cannot listen on " + impl_->settings.listen_address + ": " + why);
  }
  mg_set_request_handler(impl_->ctx, "/", &Impl::dispatch, impl_.get());
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
  if (!impl_ || !impl_->ctx) return;
  int bound = port();
  std::atomic<bool> done{false};
  std::thread stopper([this, &done] {
    mg_stop(impl_->ctx);
    done = true;
  });
  for (int i = 0; i < 100 && !done; ++i) {
    poke(impl_->settings.listen_address, bound);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stopper.join();
  impl_->ctx = nullptr;
}

int HttpServer::port() const {
  if (!impl_->ctx) return 0;
  mg_server_port ports[4];
  int n = mg_get_server_ports(impl_->ctx, 4, ports);
  return n > 0 ? ports[0].port : 0;
}

}  // namespace loadwatch
