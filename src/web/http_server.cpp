// HttpServer: the route table, the web config and its reloads, the stats. The transport behind
// it (why Boost.Beast/Asio: docs/architecture.md): http_listener (the port and the threads),
// http_session (one connection), server_core (what the connections share: limits, counters).
#include "web/http_server.h"

#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "util/log.h"
#include "web/http_listener.h"
#include "web/server_core.h"
#include "web/web_config.h"

namespace loadwatch {

using http_transport::HttpListener;
using http_transport::Rejection;
using http_transport::Route;
using http_transport::WebState;

namespace {

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

}  // namespace

struct HttpServer::Impl : http_transport::ServerCore {
  std::unique_ptr<HttpListener> listener;  // null while not serving
  int bound_port = 0;                      // kept across listener restarts (":0" keeps its port)
  std::string web_stamp;                   // file_stamp of the web config file at last load
  std::string tls_stamp;                   // tls_files_stamp at last load

  /// Starts serving with this TLS config (plain HTTP when it is not enabled).
  void start_listener(const TlsServerConfig& tls_config) {
    listener = std::make_unique<HttpListener>(*this, tls_config, bound_port);
    bound_port = listener->port();
  }
  void stop_listener() { listener.reset(); }
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
  WebConfig config;
  if (!impl_->settings.web_config_file.empty()) {
    impl_->web_stamp = file_stamp(impl_->settings.web_config_file);
    config = load_web_config(impl_->settings.web_config_file);  // throws ConfigError
    impl_->tls_stamp = tls_files_stamp(config.tls);
  }
  impl_->web = std::make_shared<const WebState>(std::move(config));
  impl_->start_listener(impl_->web->config.tls);
}

bool HttpServer::reload_web_config(bool force) {
  Impl& im = *impl_;
  const std::string& path = im.settings.web_config_file;
  if (path.empty() || !im.web) return false;
  std::string web_stamp = file_stamp(path);
  std::shared_ptr<const WebState> current = im.web_state();
  std::string tls_stamp = tls_files_stamp(current->config.tls);
  if (!force && web_stamp == im.web_stamp && tls_stamp == im.tls_stamp && im.listener) return false;
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
                 !im.listener;
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
  out.max_connections =
      impl_->cap ? impl_->cap : http_transport::connection_cap(impl_->settings.max_connections);
  out.body_bytes = impl_->body_bytes.load();
  out.max_body_memory = impl_->settings.max_body_memory;
  for (size_t i = 0; i < impl_->rejected.size(); ++i) {
    out.rejected.emplace_back(http_transport::rejection_name(static_cast<Rejection>(i)),
                              impl_->rejected[i].load());
  }
  return out;
}

int HttpServer::port() const { return impl_->listener ? impl_->bound_port : 0; }

}  // namespace loadwatch
