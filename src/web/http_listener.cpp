// Threads: `kIoThreads` run one epoll io_context for every connection (accepting, TLS, reading
// heads and bodies, writing responses); each connection is a strand with one timer
// (http_session.cpp), so an idle, slow or keep-alive connection costs its buffers (a few KiB),
// never a thread. What may block (handlers, bcrypt) runs on a HandlerPool, with a share per
// client address, and comes back to the strand to be written.
#include "web/http_listener.h"

#include <malloc.h>
#include <netdb.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/log.h"
#include "util/thread_name.h"
#include "web/http_session.h"
#include "web/server_core.h"
#include "web/tls_context.h"

namespace loadwatch::http_transport {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

constexpr int kIoThreads = 2;
constexpr int kPoolThreads = 4;
constexpr int kAuthThreads = 2;  // bcrypt runs one check at a time anyway (basic_auth.h)
constexpr auto kTrimCheck = std::chrono::seconds(2);
constexpr int kTrimAfterDrop = 64;  // connections fewer than at the peak

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
  error_code ec;
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

/// An OpenSSL server context configured from the web config (tls_context.cpp).
std::shared_ptr<asio::ssl::context> make_tls_context(const TlsServerConfig& tls) {
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (!raw) throw std::runtime_error("cannot create a TLS context");
  auto ctx = std::make_shared<asio::ssl::context>(raw);  // owns it from here
  SSL_CTX_set_options(raw, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  configure_tls_context(raw, tls);
  return ctx;
}

}  // namespace

struct HttpListener::Impl {
  ServerCore& core;
  std::unique_ptr<asio::io_context> io;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> accept_retry;
  std::unique_ptr<asio::steady_timer> trim_timer;
  std::vector<std::thread> io_threads;
  std::shared_ptr<asio::ssl::context> tls;  // null: plain HTTP
  int bound_port = 0;

  explicit Impl(ServerCore& c) : core(c) {}
  void start(const TlsServerConfig& tls_config, int port);
  void stop();
  void accept();
  /// After a flood (TLS handshakes above all), glibc's arenas keep the freed connection memory:
  /// every kTrimCheck, give it back once the connections are far fewer than at their peak.
  void trim_after_floods();
};

void HttpListener::Impl::accept() {
  acceptor->async_accept(asio::make_strand(*io), [this](error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      serve_connection(core, std::move(s), tls.get());
    } else if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
               ec == asio::error::no_memory) {
      // EMFILE: the pending connection stays queued; try again shortly instead of spinning.
      accept_retry->expires_after(std::chrono::milliseconds(50));
      accept_retry->async_wait([this](error_code e) {
        if (!e) accept();
      });
      return;
    }
    accept();
  });
}

void HttpListener::Impl::trim_after_floods() {
  trim_timer->expires_after(kTrimCheck);
  trim_timer->async_wait([this](error_code ec) {
    if (ec) return;
    int now = core.sessions.load();
    if (core.sessions_peak.exchange(now) - now >= kTrimAfterDrop) malloc_trim(0);
    trim_after_floods();
  });
}

void HttpListener::Impl::start(const TlsServerConfig& tls_config, int port) {
  const HttpServerSettings& settings = core.settings;
  const std::string& address = settings.listen_address;
  tcp::endpoint where = listen_endpoint(address, port);
  std::shared_ptr<asio::ssl::context> next_tls;
  if (tls_config.enabled()) next_tls = make_tls_context(tls_config);  // throws with the reason
  core.cap = connection_cap(settings.max_connections);
  if (core.cap < settings.max_connections) {
    spdlog::warn(
        "serving at most {} HTTP connections at once instead of {}: the soft "
        "RLIMIT_NOFILE is {} (raise LimitNOFILE= or ulimit -n)",
        core.cap, settings.max_connections, core.cap * 4);
  }
  auto ctx = std::make_unique<asio::io_context>(kIoThreads);
  auto acc = std::make_unique<tcp::acceptor>(*ctx);
  error_code ec;
  acc->open(where.protocol(), ec);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && where.address().is_v6()) acc->set_option(asio::ip::v6_only(true), ec);
  if (!ec) acc->bind(where, ec);
  if (!ec) acc->listen(1024, ec);
  if (ec) throw std::runtime_error("cannot listen on " + address + ": " + ec.message());
  bound_port = acc->local_endpoint().port();
  tls = std::move(next_tls);
  const int per_address = std::max(1, settings.max_connections_per_address);
  core.table = std::make_unique<ConnectionTable>(static_cast<std::size_t>(core.cap),
                                                 static_cast<std::size_t>(per_address));
  const int slots = std::max(1, settings.max_requests);
  const int slots_per_address = settings.max_requests_per_address > 0
                                    ? std::min(settings.max_requests_per_address, slots)
                                    : std::max(std::min(2, slots), slots / 4);
  core.pool =
      std::make_unique<HandlerPool>(std::min(kPoolThreads, slots), slots, slots_per_address);
  // Twice bcrypt's own share per address: logins of one client that arrive together wait for
  // the first one's result (then cached) instead of getting 429; room for 8 such addresses.
  core.auth_pool = std::make_unique<HandlerPool>(kAuthThreads, 4 * BasicAuth::kMaxWaiting,
                                                 2 * BasicAuth::kMaxWaitingPerClient, "lw-auth");
  io = std::move(ctx);
  acceptor = std::move(acc);
  accept_retry = std::make_unique<asio::steady_timer>(*io);
  trim_timer = std::make_unique<asio::steady_timer>(*io);
  accept();
  trim_after_floods();
  for (int i = 0; i < kIoThreads; ++i) {
    io_threads.emplace_back([this] {
      name_this_thread("lw-http-io");
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

void HttpListener::Impl::stop() {
  if (!io) return;
  asio::post(*io, [this] {
    error_code ignored;
    acceptor->close(ignored);
    accept_retry->cancel();
    trim_timer->cancel();
  });
  core.pool->stop();  // waits for the running handlers; their responses are dropped below
  core.auth_pool->stop();
  io->stop();
  for (auto& t : io_threads) t.join();
  io_threads.clear();
  accept_retry.reset();
  trim_timer.reset();
  acceptor.reset();
  io.reset();  // destroys the connections still open
  core.pool.reset();
  core.auth_pool.reset();
  core.table.reset();
  tls.reset();
}

HttpListener::HttpListener(ServerCore& core, const TlsServerConfig& tls, int port)
    : impl_(std::make_unique<Impl>(core)) {
  impl_->start(tls, port);
}

HttpListener::~HttpListener() { impl_->stop(); }

int HttpListener::port() const { return impl_->bound_port; }

}  // namespace loadwatch::http_transport
