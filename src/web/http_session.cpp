// The connection state machine (one Session per connection, plain or TLS).
//
// Every wait has a deadline of the connection's own timer:
// - the TLS handshake and the whole head of the first request: request_timeout_ms from the
//   accept; later heads: keep_alive_timeout_ms for the first byte, then request_timeout_ms;
//   a connection that misses one is closed without an answer;
// - a body: no byte for request_timeout_ms (400), or slower than min_transfer_rate after
//   2 × request_timeout_ms (408); a response the same way (closed, counted).
// A connection ends after max_requests_per_connection requests or max_connection_age_ms, so
// keep-alive pins nothing. Credentials are checked before the route, the body and the request
// limit, against a bcrypt queue that turns a flood away (basic_auth.h). A framing error (Beast's
// parser refuses Content-Length with Transfer-Encoding, differing lengths, bad chunks) is a 400
// that closes the connection (RFC 9112 section 6.1).
#include "web/http_session.h"

#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "util/log.h"
#include "web/query_string.h"
#include "web/server_core.h"

namespace loadwatch::http_transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// After a response with Connection: close, what the client still sends is read and dropped
/// this long, so that closing with unread data (a TCP reset) does not destroy the response.
constexpr auto kLinger = std::chrono::seconds(1);

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// The reason phrase: Beast's, but the older RFC 2616 wording for two that clients know.
std::string reason_phrase(int status) {
  if (status == 408) return "Request Time-out";
  if (status == 413) return "Request Entity Too Large";
  auto text = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  return text == "<unknown-status>" ? "Unknown" : std::string(text);
}

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
    if (!core_.reserve_body(want)) return body_memory_full();
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

  void body_memory_full() {
    reject(Rejection::body_memory,
           plain(503, "request bodies in progress hold more than " +
                          std::to_string(settings().max_body_memory) + " bytes; retry later\n"),
           *web_, true);
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
      if (!core_.reserve_body(grow)) return body_memory_full();
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
      if (resp.refused_busy) self->core_.count(Rejection::answers_busy);
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
    keep_ = !close && head.keep_alive() && requests_ < settings().max_requests_per_connection &&
            Clock::now() - opened_ < std::chrono::milliseconds(settings().max_connection_age_ms);
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

void serve_connection(ServerCore& core, tcp::socket socket, asio::ssl::context* tls) {
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
    switch (core.table->admit(session->peer(), session->id(), member)) {
      case ConnectionTable::Admission::admitted:
        break;
      case ConnectionTable::Admission::admitted_evicting_own:
        core.count(Rejection::address_connections);
        break;
      case ConnectionTable::Admission::admitted_evicting_other:
        core.count(Rejection::connections_full);
        break;
      case ConnectionTable::Admission::refused_address:
        core.count(Rejection::address_connections);
        return;  // closed as the session goes
      case ConnectionTable::Admission::refused_full:
        core.count(Rejection::connections_full);
        return;
    }
    session->start();
  };
  if (tls) {
    start(std::make_shared<Session<asio::ssl::stream<tcp::socket>>>(core, address.to_string(),
                                                                    std::move(socket), *tls));
  } else {
    start(std::make_shared<Session<tcp::socket>>(core, address.to_string(), std::move(socket)));
  }
}

}  // namespace loadwatch::http_transport
