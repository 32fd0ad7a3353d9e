// The Graphite listener over real TCP sockets on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

int connect_to(int port, bool v6 = false) {
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
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
