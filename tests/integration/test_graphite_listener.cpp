// The Graphite listener over real TCP sockets on loopback.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "collectors/graphite.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;
using namespace std::chrono_literals;

namespace {

int connect_to(int port, bool v6 = false, const char* from = nullptr) {
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  if (from) {  // a distinct loopback client address (127.0.0.0/8 is all loopback)
    sockaddr_in src{};
    src.sin_family = AF_INET;
    REQUIRE(inet_pton(AF_INET, from, &src.sin_addr) == 1);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0);
  }
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    a.sin6_addr = in6addr_loopback;
    rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  REQUIRE(rc == 0);
  return fd;
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    REQUIRE(n > 0);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

/// True when the server closed `fd` (EOF or reset) within `within`.
bool closed_by_server(int fd, std::chrono::milliseconds within) {
  timeval tv{static_cast<time_t>(within.count() / 1000),
             static_cast<suseconds_t>(within.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[8];
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

std::map<std::string, double> flatten(const JMeterModel& m) {
  MetricSink sink;
  m.collect(sink);
  return test::sample_values(sink);
}

// Waits (bounded: 5 s) until `key` has `value`.
bool wait_value(const JMeterModel& m, const std::string& key, double value) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto v = flatten(m);
    if (v.count(key) && v[key] == value) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

}  // namespace

TEST_CASE("graphite listener: lines split across writes and connections add up") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener listener({"127.0.0.1:0"}, model);
  REQUIRE(listener.port() > 0);
  int a = connect_to(listener.port());
  int b = connect_to(listener.port());
  send_all(a, "jmeter.all.a.count 10 1\r\njmeter.all.ko");  // CRLF; line cut mid-path
  send_all(b, "jmeter.all.a.count 5 1\n");
  std::this_thread::sleep_for(20ms);
  send_all(a, ".count 2 1\njmeter.home.a.count 7 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 15));
  CHECK(wait_value(*model, "loadwatch_generator_failures_total{source=jmeter}", 2));
  CHECK(wait_value(
      *model, "loadwatch_generator_endpoint_requests_total{source=jmeter,name=home,method=}", 7));
  CHECK(listener.connections() == 2);
  // A last line without '\n' counts when the sender closes.
  send_all(b, "jmeter.all.a.count 1 1");
  close(b);
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 16));
  close(a);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (listener.connections() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK(listener.connections() == 0);
}

TEST_CASE("graphite listener: over-long and malformed lines are dropped and counted") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener listener({"127.0.0.1:0", 64}, model);
  int fd = connect_to(listener.port());
  std::string huge(100000, 'x');  // far beyond max_line, across many reads
  send_all(fd, "jmeter.all.a.count 1 1\n" + huge + " 1 1\nnot a graphite line\n" +
                   "jmeter.all.a.count 2 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 3));
  auto v = flatten(*model);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=too_long}"] == 1);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=graphite,reason=parse}"] == 1);
  close(fd);
}

TEST_CASE("graphite listener: connections beyond the cap are closed at once") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener listener({"127.0.0.1:0", 4096, 2}, model);
  int a = connect_to(listener.port());
  int b = connect_to(listener.port());
  int c = connect_to(listener.port());
  // The third connection is accepted and closed: a read sees EOF (bounded by SO_RCVTIMEO).
  timeval tv{5, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[8];
  CHECK(recv(c, buf, sizeof buf, 0) == 0);
  send_all(a, "jmeter.all.a.count 1 1\n");
  send_all(b, "jmeter.all.a.count 1 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 2));
  close(a);
  close(b);
  close(c);
}

TEST_CASE("graphite listener: all-address form takes IPv4 and IPv6 loopback") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener listener({":0"}, model);
  int a = connect_to(listener.port());
  send_all(a, "p.all.a.count 1 1\n");
  close(a);
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=p}", 1));
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  bool have_v6 = fd >= 0;
  if (fd >= 0) close(fd);
  if (have_v6) {
    int b = connect_to(listener.port(), true);
    send_all(b, "p.all.a.count 1 1\n");
    close(b);
    CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=p}", 2));
  }
}

TEST_CASE("graphite listener: bad addresses and busy ports are clear errors") {
  auto model = std::make_shared<JMeterModel>("graphite");
  CHECK_THROWS_WITH(GraphiteListener({"nocolon"}, model), Catch::Contains("not HOST:PORT"));
  GraphiteListener first({"127.0.0.1:0"}, model);
  std::string busy = "127.0.0.1:" + std::to_string(first.port());
  CHECK_THROWS_WITH(GraphiteListener({busy}, model), Catch::Contains("cannot listen"));
}

TEST_CASE("graphite listener: stops promptly with connections open") {
  auto model = std::make_shared<JMeterModel>("graphite");
  auto listener =
      std::make_unique<GraphiteListener>(GraphiteListener::Settings{"127.0.0.1:0"}, model);
  int fd = connect_to(listener->port());
  auto t0 = std::chrono::steady_clock::now();
  listener.reset();
  CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  close(fd);
}

TEST_CASE("graphite listener: a connection without a complete line for idle_timeout is closed") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener::Settings settings{"127.0.0.1:0"};
  settings.idle_timeout = 400ms;
  GraphiteListener listener(settings, model);
  int silent = connect_to(listener.port());
  int trickle = connect_to(listener.port());
  int active = connect_to(listener.port());
  auto t0 = std::chrono::steady_clock::now();
  // Half a line every 100 ms is not activity; a complete line every 100 ms is.
  while (std::chrono::steady_clock::now() - t0 < 1s) {
    send_all(active, "jmeter.all.a.count 1 1\n");
    send(trickle, "j", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(closed_by_server(silent, 100ms));
  CHECK(closed_by_server(trickle, 100ms));
  send_all(active, "jmeter.all.a.count 1 1\n");
  CHECK_FALSE(closed_by_server(active, 200ms));
  CHECK(listener.connections() == 1);
  CHECK(listener.closed().idle_timeout == 2);
  for (int fd : {silent, trickle, active}) close(fd);
}

TEST_CASE("graphite listener: one address cannot take every connection") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener::Settings settings{"127.0.0.1:0"};
  settings.max_connections = 8;
  settings.max_per_address = 3;
  GraphiteListener listener(settings, model);
  std::vector<int> flood;
  for (int i = 0; i < 8; ++i) flood.push_back(connect_to(listener.port(), false, "127.0.0.2"));
  // The flooding address keeps three; the others are closed at once.
  int refused = 0;
  for (int fd : flood) refused += closed_by_server(fd, 300ms);
  CHECK(refused == 5);
  // Another sender (JMeter) still gets in and is heard.
  int jmeter = connect_to(listener.port(), false, "127.0.0.3");
  send_all(jmeter, "jmeter.all.a.count 4 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 4));
  CHECK(listener.closed().per_address_limit == 5);
  for (int fd : flood) close(fd);
  close(jmeter);
}

TEST_CASE("graphite listener: when full, a new sender replaces the longest idle connection") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener::Settings settings{"127.0.0.1:0"};
  settings.max_connections = 4;
  settings.evictable_after = 300ms;
  GraphiteListener listener(settings, model);
  int active = connect_to(listener.port(), false, "127.0.0.2");
  std::vector<int> idle;
  for (const char* from : {"127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    idle.push_back(connect_to(listener.port(), false, from));
    std::this_thread::sleep_for(20ms);  // accepted in this order: idle[0] is the oldest
  }
  // Full, and every connection fresh: a newcomer is turned away.
  int early = connect_to(listener.port(), false, "127.0.0.6");
  CHECK(closed_by_server(early, 300ms));
  CHECK(listener.closed().full == 1);
  auto t0 = std::chrono::steady_clock::now();
  int sent = 0;
  while (std::chrono::steady_clock::now() - t0 < 500ms) {
    send_all(active, "jmeter.all.a.count 1 1\n");
    ++sent;
    std::this_thread::sleep_for(50ms);
  }
  // Now the idle ones are evictable: the oldest goes, the active sender stays.
  int jmeter = connect_to(listener.port(), false, "127.0.0.7");
  CHECK(closed_by_server(idle[0], 500ms));
  CHECK_FALSE(closed_by_server(active, 100ms));
  send_all(jmeter, "jmeter.all.a.count 100 1\n");
  send_all(active, "jmeter.all.a.count 1 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", sent + 101));
  CHECK(listener.closed().evicted == 1);
  CHECK(listener.connections() == 4);
  for (int fd : idle) close(fd);
  for (int fd : {early, active, jmeter}) close(fd);
}

namespace {

/// Connects from `from` until a connection is kept (not closed at once), bounded by 5 s;
/// -1 when every try was turned away.
int connect_kept(int port, const char* from) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = connect_to(port, false, from);
    if (!closed_by_server(fd, 50ms)) return fd;
    close(fd);
  }
  return -1;
}

}  // namespace

TEST_CASE("graphite listener: a sender's own silent connections do not lock it out") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener::Settings settings{"127.0.0.1:0"};
  settings.max_per_address = 4;
  settings.evictable_after = 300ms;
  GraphiteListener listener(settings, model);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_to(listener.port(), false, "127.0.0.2"));
  // Fresh, they keep their share; once silent for evictable_after the sender replaces one.
  int jmeter = connect_kept(listener.port(), "127.0.0.2");
  REQUIRE(jmeter >= 0);
  send_all(jmeter, "jmeter.all.a.count 7 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 7));
  CHECK(closed_by_server(idle[0], 500ms));  // the one silent longest
  CHECK(listener.closed().evicted == 1);
  CHECK(listener.connections() == 4);
  for (int fd : idle) close(fd);
  close(jmeter);
}

TEST_CASE("graphite listener: junk lines do not keep a connection's place") {
  auto model = std::make_shared<JMeterModel>("graphite");
  GraphiteListener::Settings settings{"127.0.0.1:0"};
  settings.max_connections = 8;
  settings.max_per_address = 2;
  settings.evictable_after = 300ms;
  GraphiteListener listener(settings, model);
  std::vector<int> junk;
  for (const char* from : {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}) {
    for (int i = 0; i < 2; ++i) junk.push_back(connect_to(listener.port(), false, from));
  }
  // Junk every 100 ms from all eight while the sender tries (bounded: 5 s).
  std::atomic<bool> done{false};
  std::thread junker([&] {
    for (int round = 0; round < 50 && !done; ++round) {
      for (int fd : junk) send(fd, "not a graphite line\n", 20, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  int jmeter = connect_kept(listener.port(), "127.0.0.6");
  done = true;
  junker.join();
  REQUIRE(jmeter >= 0);
  send_all(jmeter, "jmeter.all.a.count 9 1\n");
  CHECK(wait_value(*model, "loadwatch_generator_requests_total{source=jmeter}", 9));
  CHECK(listener.closed().evicted >= 1);
  for (int fd : junk) close(fd);
  close(jmeter);
}
