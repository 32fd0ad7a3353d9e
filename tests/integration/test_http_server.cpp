// The HTTP server's request limits over real loopback sockets: body framing (short bodies,
// chunked errors, ambiguous lengths), per-route body caps, the body memory budget, whole-transfer
// and keep-alive deadlines and the handler concurrency limit.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "web/http_server.h"

using namespace loadwatch;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

/// A raw client connection with a receive timeout.
struct Raw {
  int fd = -1;
  explicit Raw(int port, int rcvbuf = 0) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    if (rcvbuf) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeout(10s);
  }
  ~Raw() { close(fd); }
  void timeout(std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000),
               static_cast<suseconds_t>(t.count() % 1000 * 1000)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  /// Reads one response: headers, then Content-Length bytes (or until the server closes).
  std::string response() {
    std::string data;
    char buf[65536];
    for (;;) {
      auto head_end = data.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        auto cl = data.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) {
          size_t len = std::stoul(data.substr(cl + 16));
          if (data.size() >= head_end + 4 + len) return data;
        }
      }
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return data;
      data.append(buf, static_cast<size_t>(n));
    }
  }
  /// Seconds until the server closes the connection (reading and discarding), or -1.
  double seconds_until_closed(std::chrono::milliseconds within) {
    auto t0 = Clock::now();
    char buf[4096];
    while (Clock::now() - t0 < within) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        return std::chrono::duration<double>(Clock::now() - t0).count();
      }
    }
    return -1;
  }
};

std::string status_of(const std::string& response) {
  return response.substr(0, response.find("\r\n"));
}

struct Server {
  HttpServer http;
  std::mutex mutex;
  std::vector<std::string> bodies;  // what the /echo handler received
  explicit Server(HttpServerSettings s) : http(with_port_0(std::move(s))) {
    http.route(
        "/echo",
        [this](const HttpRequest& req) {
          std::lock_guard<std::mutex> lock(mutex);
          bodies.push_back(req.body);
          HttpResponse r;
          r.body = std::to_string(req.body.size()) + "\n";
          return r;
        },
        1 << 20);
    http.route("/get", [](const HttpRequest&) {
      HttpResponse r;
      r.body = "ok\n";
      return r;
    });
    http.route("/big", [](const HttpRequest&) {
      HttpResponse r;
      r.shared_body = std::make_shared<const std::string>(16 << 20, 'x');
      return r;
    });
  }
  static HttpServerSettings with_port_0(HttpServerSettings s) {
    s.listen_address = "127.0.0.1:0";
    return s;
  }
  int port() const { return http.port(); }
  std::uint64_t rejected(const std::string& reason) const {
    for (const auto& [r, n] : http.stats().rejected) {
      if (r == reason) return n;
    }
    FAIL("no reason " << reason);
    return 0;
  }
  size_t received() {
    std::lock_guard<std::mutex> lock(mutex);
    return bodies.size();
  }
};

HttpServerSettings fast() {
  HttpServerSettings s;
  s.request_timeout_ms = 500;
  s.max_connections = 32;
  return s;
}

}  // namespace

TEST_CASE("http server: a body shorter than its Content-Length is 400, never handled") {
  Server srv(fast());
  srv.http.start();
  {  // The client stops sending and half-closes.
    Raw c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    shutdown(c.fd, SHUT_WR);
    std::string r = c.response();
    CHECK(status_of(r) == "HTTP/1.1 400 Bad Request");
    CHECK(r.find("ended after 10 of its 100 bytes") != std::string::npos);
  }
  {  // The client stops sending and waits: 400 once the read times out.
    Raw c(srv.port());
    auto t0 = Clock::now();
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789");
    std::string r = c.response();
    CHECK(status_of(r) == "HTTP/1.1 400 Bad Request");
    CHECK(Clock::now() - t0 < 4s);  // request_timeout_ms 500, on a loaded machine
  }
  {  // A whole body is handled.
    Raw c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789");
    CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
  }
  CHECK(srv.received() == 1);
  CHECK(srv.rejected("body_incomplete") == 2);
}

TEST_CASE("http server: chunked bodies are read whole; malformed ones are 400") {
  Server srv(fast());
  srv.http.start();
  {
    Raw c(srv.port());
    c.send(
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    std::string r = c.response();
    CHECK(status_of(r) == "HTTP/1.1 200 OK");
    REQUIRE(srv.received() == 1);
    CHECK(srv.bodies[0] == "hello world");
  }
  const char* bad[] = {
      "zz\r\nhello\r\n0\r\n\r\n",       // not a hex size
      "5\r\nhello world\r\n0\r\n\r\n",  // more data than the size said
      "5\r\nhel",                       // cut off, then closed
      "5\r\nhello\r\n",                 // no last chunk, then closed
      "\r\n\r\n",                       // no size at all
  };
  for (const char* body : bad) {
    Raw c(srv.port());
    c.send(std::string("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n") +
           body);
    shutdown(c.fd, SHUT_WR);
    std::string r = c.response();
    INFO(body);
    CHECK(status_of(r) == "HTTP/1.1 400 Bad Request");
    CHECK(r.find("malformed chunked request body") != std::string::npos);
  }
  CHECK(srv.received() == 1);
  CHECK(srv.rejected("bad_framing") == std::size(bad));
}

TEST_CASE("http server: ambiguous body framing is 400") {
  Server srv(fast());
  srv.http.start();
  const char* heads[] = {
      "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
      "Content-Length: 5\r\nContent-Length: 6\r\n",
      "Content-Length: 5abc\r\n",
      "Content-Length: -5\r\n",
      "Content-Length: +5\r\n",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
  };
  for (const char* h : heads) {
    Raw c(srv.port());
    c.send(std::string("POST /echo HTTP/1.1\r\nHost: x\r\n") + h + "\r\n5\r\nhello\r\n0\r\n\r\n");
    std::string r = c.response();
    INFO(h);
    CHECK(status_of(r).substr(0, 10) == "HTTP/1.1 4");  // 400 from the parser
  }
  CHECK(srv.received() == 0);
  // The same length twice is not ambiguous.
  Raw c(srv.port());
  c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
  CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
}

TEST_CASE("http server: a route without a body cap takes no body; others stop at theirs") {
  Server srv(fast());
  srv.http.start();
  for (const char* req : {"GET /get HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
                          "POST /get HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n",
                          "GET /get HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n0\r\n\r\n"}) {
    Raw c(srv.port());
    c.send(req);
    std::string r = c.response();
    INFO(req);
    CHECK(status_of(r) == "HTTP/1.1 413 Request Entity Too Large");
    CHECK(r.find("/get takes no request body") != std::string::npos);
  }
  for (const char* req : {"GET /get HTTP/1.1\r\nHost: x\r\n\r\n",
                          "POST /get HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"}) {
    Raw c(srv.port());
    c.send(req);
    CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
  }
  {  // Over the route's cap by Content-Length: answered before any body byte is read.
    Raw c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n");
    CHECK(status_of(c.response()) == "HTTP/1.1 413 Request Entity Too Large");
  }
  {  // Over the cap in chunks: stopped at the cap.
    Raw c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
    for (int i = 0; i < 17 && c.send(chunk); ++i) {
    }
    CHECK(status_of(c.response()) == "HTTP/1.1 413 Request Entity Too Large");
  }
  CHECK(srv.received() == 0);
  CHECK(srv.rejected("body_not_allowed") == 3);
  CHECK(srv.rejected("body_too_large") == 2);
}

TEST_CASE("http server: request bodies together stay within max_body_memory (503 beyond)") {
  HttpServerSettings s = fast();
  s.request_timeout_ms = 3000;
  s.max_body_memory = 1 << 20;
  Server srv(s);
  srv.http.start();
  std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 600000\r\n\r\n";
  Raw first(srv.port());
  first.send(head + "abc");  // reserves 600000 bytes, then waits for the rest
  auto deadline = Clock::now() + 3s;
  while (srv.http.stats().body_bytes == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  CHECK(srv.http.stats().body_bytes == 600000);
  {  // A compressed body reserves the route's whole cap (it may inflate to that): no room.
    Raw zipped(srv.port());
    zipped.send(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
        "Content-Length: 3\r\n\r\nabc");
    CHECK(status_of(zipped.response()) == "HTTP/1.1 503 Service Unavailable");
  }
  {
    Raw second(srv.port());
    second.send(head);
    std::string r = second.response();
    CHECK(status_of(r) == "HTTP/1.1 503 Service Unavailable");
    CHECK(r.find("Retry-After: 1") != std::string::npos);
    CHECK(r.find("request bodies in progress hold more than 1048576 bytes") != std::string::npos);
  }
  first.send(std::string(600000 - 3, 'x'));
  CHECK(status_of(first.response()) == "HTTP/1.1 200 OK");
  CHECK(srv.http.stats().body_bytes == 0);
  Raw third(srv.port());
  third.send(head + std::string(600000, 'y'));
  CHECK(status_of(third.response()) == "HTTP/1.1 200 OK");
  Raw zipped(srv.port());
  zipped.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
      "Content-Length: 3\r\n\r\nabc");
  CHECK(status_of(zipped.response()) == "HTTP/1.1 200 OK");  // alone, it fits
  CHECK(srv.rejected("body_memory") == 2);
}

TEST_CASE("http server: a trickled body or a slowly read response is cut at its deadline") {
  HttpServerSettings s = fast();
  s.min_transfer_rate = 4 << 20;  // 16 MiB response: 1 s + 4 s
  Server srv(s);
  srv.http.start();
  {  // One body byte every 200 ms: the 500 ms without data never passes.
    Raw c(srv.port());
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n");
    auto t0 = Clock::now();
    char peek;
    while (Clock::now() - t0 < 5s && recv(c.fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT) < 0) {
      std::this_thread::sleep_for(200ms);
      c.send("x");
    }
    std::string r = c.response();
    double total = std::chrono::duration<double>(Clock::now() - t0).count();
    CAPTURE(total);
    CHECK(status_of(r) == "HTTP/1.1 408 Request Time-out");
    CHECK(r.find("request body arrived slower than 4194304 bytes/s") != std::string::npos);
    CHECK(total < 4.0);  // deadline 1 s + 1000 B at 4 MiB/s, on a loaded machine
  }
  {  // Reads 1 KiB every 100 ms (10 KiB/s) of a 16 MiB response, more than the kernel buffers
     // (it takes up to tcp_wmem's 4 MiB off the server's hands).
    Raw c(srv.port(), 4096);
    c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
    auto t0 = Clock::now();
    char buf[1024];
    while (srv.rejected("transfer_timeout") < 2 && Clock::now() - t0 < 15s) {
      if (recv(c.fd, buf, sizeof buf, 0) <= 0) break;
      std::this_thread::sleep_for(100ms);
    }
    double total = std::chrono::duration<double>(Clock::now() - t0).count();
    CAPTURE(total);
    CHECK(total < 12.0);                       // deadline 1 s + 16 MiB at 4 MiB/s
    CHECK(srv.http.stats().connections == 0);  // the worker is free again
  }
  Raw c(srv.port());  // the server is fine
  c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
}

TEST_CASE("http server: an idle keep-alive connection closes; a later head has its own time") {
  HttpServerSettings s = fast();
  s.keep_alive_timeout_ms = 300;
  s.request_timeout_ms = 1500;
  Server srv(s);
  srv.http.start();
  {  // Answered, then silent: closed after the keep-alive time, not the request time.
    Raw c(srv.port());
    c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = c.response();
    CHECK(status_of(r) == "HTTP/1.1 200 OK");
    CHECK(r.find("Connection: close") == std::string::npos);
    double closed = c.seconds_until_closed(5s);
    CAPTURE(closed);
    CHECK(closed >= 0.2);
    CHECK(closed < 1.2);
  }
  {  // The next head starts within the keep-alive time and ends after it, within the request
     // time from its first byte: served.
    Raw c(srv.port());
    c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
    std::this_thread::sleep_for(100ms);
    c.send("GET /get HTTP/1.1\r\n");
    std::this_thread::sleep_for(600ms);
    c.send("Host: x\r\n\r\n");
    CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
  }
}

TEST_CASE("http server: max_requests counts running handlers, not slow clients") {
  HttpServerSettings s = fast();
  s.request_timeout_ms = 5000;
  s.max_requests = 2;
  Server srv(s);
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> waiting{0};
  srv.http.route("/slow", [&](const HttpRequest&) {
    ++waiting;
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, 10s, [&] { return release; });
    HttpResponse r;
    r.body = "done\n";
    return r;
  });
  srv.http.start();
  // Five clients in the middle of sending a body: no handler runs for them.
  std::vector<std::unique_ptr<Raw>> trickling;
  for (int i = 0; i < 5; ++i) {
    trickling.push_back(std::make_unique<Raw>(srv.port()));
    trickling.back()->send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab");
  }
  {
    Raw c(srv.port());
    c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
  }
  // Two handlers running: the third request is turned away.
  Raw a(srv.port()), b(srv.port());
  a.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  b.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  auto deadline = Clock::now() + 5s;
  while (waiting < 2 && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  REQUIRE(waiting == 2);
  {
    Raw c(srv.port());
    c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string r = c.response();
    CHECK(status_of(r) == "HTTP/1.1 503 Service Unavailable");
    CHECK(r.find("too many concurrent requests") != std::string::npos);
  }
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  CHECK(status_of(a.response()) == "HTTP/1.1 200 OK");
  CHECK(status_of(b.response()) == "HTTP/1.1 200 OK");
  Raw c(srv.port());
  c.send("GET /get HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(status_of(c.response()) == "HTTP/1.1 200 OK");
  CHECK(srv.rejected("too_many_requests") == 1);
}
