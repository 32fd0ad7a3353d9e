// Boost.Beast/Asio (Boost 1.81, Debian 12's libboost1.81-dev): one io_context run by `threads`
// threads (1 or 2), a strand and a timer per connection, so an open connection costs its
// buffers, not a thread. TLS (OpenSSL, as loadwatch's) when tls_cert= and tls_key= are given.
//   beast_server port=0 threads=1 connections=4000 per_ip=0 header_ms=5000 idle_ms=10000
//                max_requests=1000 max_age=300 [tls_cert=PEM tls_key=PEM]
// - header_ms: the TLS handshake and the whole head of the first request must be done within
//   it from the accept (not per read), so a client trickling a byte a second is closed after
//   5 s; idle_ms: the same for each later request on a keep-alive connection, counting the wait
//   for its first byte.
// - connections / per_ip: open connections in all and per client address; one over either is
//   accepted and closed at once.
// - max_requests / max_age: past either, the response says "Connection: close" and the
//   connection ends, so keep-alive cannot pin a slot.
// - A head over 16 KiB, or any framing error (Beast rejects Content-Length with
//   Transfer-Encoding, differing Content-Lengths, bad chunking): 400 and the connection closes.
#include <signal.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "bench_args.h"
#include "metrics_body.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Limits {
  long connections, per_ip, header_ms, idle_ms, max_requests, max_age_s;
};

/// Open connections, in all and per client address (shared by the io threads).
class Shares {
 public:
  explicit Shares(const Limits& l) : limits_(l) {}
  bool take(const asio::ip::address& a) {
    std::lock_guard lock(mu_);
    long& mine = per_address_[a.to_string()];
    if (open_ >= limits_.connections || (limits_.per_ip > 0 && mine >= limits_.per_ip)) {
      if (mine == 0) per_address_.erase(a.to_string());
      return false;
    }
    ++mine;
    ++open_;
    return true;
  }
  void give_back(const asio::ip::address& a) {
    std::lock_guard lock(mu_);
    --open_;
    if (--per_address_[a.to_string()] <= 0) per_address_.erase(a.to_string());
  }

 private:
  const Limits& limits_;
  std::mutex mu_;
  long open_ = 0;
  std::unordered_map<std::string, long> per_address_;
};

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <class... StreamArgs>
  Session(asio::ip::address peer, const Limits& limits, Shares& shares, StreamArgs&&... args)
      : stream_(std::forward<StreamArgs>(args)...),
        peer_(std::move(peer)),
        limits_(limits),
        shares_(shares) {}
  ~Session() { shares_.give_back(peer_); }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->lowest().expires_at(self->opened_ +
                                  std::chrono::milliseconds(self->limits_.header_ms));
        self->stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->close();
          self->read();
        });
      } else {
        self->read();
      }
    });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(0);
    if (requests_ == 0) {
      lowest().expires_at(opened_ + std::chrono::milliseconds(limits_.header_ms));
    } else {
      lowest().expires_after(std::chrono::milliseconds(limits_.idle_ms));
    }
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                       self->on_read(ec);
                     });
  }

  void on_read(beast::error_code ec) {
    if (ec == beast::error::timeout || ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset) {
      return close();
    }
    if (ec) return respond(http::status::bad_request, "bad request\n", false);
    ++requests_;
    const auto& req = parser_->get();
    bool keep = req.keep_alive() && requests_ < limits_.max_requests &&
                Clock::now() - opened_ < std::chrono::seconds(limits_.max_age_s);
    if (req.target() == "/metrics") return respond(http::status::ok, metrics_body(), keep);
    if (req.target() == "/-/healthy") return respond(http::status::ok, ok_, keep);
    respond(http::status::not_found, "not found\n", false);
  }

  void respond(http::status status, const std::string& body, bool keep) {
    auto res = std::make_shared<http::response<http::span_body<const char>>>(
        status, 11, http::span_body<const char>::value_type(body.data(), body.size()));
    res->set(http::field::content_type, "text/plain; version=0.0.4");
    res->content_length(body.size());
    res->keep_alive(keep);
    // Twice the header time, plus the bytes at 64 KiB/s: a reader that stalls is cut off.
    lowest().expires_after(std::chrono::milliseconds(2 * limits_.header_ms) +
                           std::chrono::milliseconds(body.size() * 1000 / 65536));
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
          if (ec || !keep) return self->close();
          self->read();
        });
  }

  void close() {  // no TLS close_notify: a bench server need not wait for the peer's
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    lowest().close();
  }

  static inline const std::string ok_ = "OK\n";
  Stream stream_;
  beast::flat_buffer buffer_{8192};
  std::optional<http::request_parser<http::empty_body>> parser_;
  asio::ip::address peer_;
  const Limits& limits_;
  Shares& shares_;
  Clock::time_point opened_ = Clock::now();
  long requests_ = 0;
};

void accept(tcp::acceptor& acceptor, asio::io_context& ioc, const Limits& limits, Shares& shares,
            asio::ssl::context* tls) {
  acceptor.async_accept(asio::make_strand(ioc), [&, tls](beast::error_code ec, tcp::socket socket) {
    if (!ec) {
      beast::error_code peer_ec;
      auto peer = socket.remote_endpoint(peer_ec).address();
      socket.set_option(tcp::no_delay(true), peer_ec);
      if (!peer_ec && shares.take(peer)) {
        if (tls) {
          using TlsStream = beast::ssl_stream<beast::tcp_stream>;
          std::make_shared<Session<TlsStream>>(peer, limits, shares, std::move(socket), *tls)
              ->start();
        } else {
          std::make_shared<Session<beast::tcp_stream>>(peer, limits, shares, std::move(socket))
              ->start();
        }
      }  // else the socket closes here: over the share
    } else if (ec == asio::error::no_descriptors) {
      // EMFILE: the pending connection stays queued; try again shortly instead of spinning.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (ec != asio::error::operation_aborted) accept(acceptor, ioc, limits, shares, tls);
  });
}

}  // namespace

int main(int argc, char** argv) {
  Limits limits{
      bench_arg(argc, argv, "connections", 4000),  bench_arg(argc, argv, "per_ip", 0),
      bench_arg(argc, argv, "header_ms", 5000),    bench_arg(argc, argv, "idle_ms", 10000),
      bench_arg(argc, argv, "max_requests", 1000), bench_arg(argc, argv, "max_age", 300)};
  Shares shares(limits);
  metrics_body();
  const int threads = static_cast<int>(bench_arg(argc, argv, "threads", 1));
  asio::io_context ioc(threads);
  tcp::acceptor acceptor(ioc);
  tcp::endpoint where(asio::ip::make_address("127.0.0.1"),
                      static_cast<unsigned short>(bench_arg(argc, argv, "port", 0)));
  acceptor.open(where.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(where);
  acceptor.listen(1024);
  std::optional<asio::ssl::context> tls;
  const std::string cert = bench_str(argc, argv, "tls_cert"),
                    key = bench_str(argc, argv, "tls_key");
  if (!cert.empty()) {
    tls.emplace(asio::ssl::context::tls_server);
    tls->set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    tls->use_certificate_chain_file(cert);
    tls->use_private_key_file(key, asio::ssl::context::pem);
  }
  accept(acceptor, ioc, limits, shares, tls ? &*tls : nullptr);
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  std::printf("listening %u threads=%d\n", acceptor.local_endpoint().port(), threads);
  std::fflush(stdout);
  std::vector<std::thread> extra;
  for (int i = 1; i < threads; ++i) extra.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : extra) t.join();
  return 0;
}
