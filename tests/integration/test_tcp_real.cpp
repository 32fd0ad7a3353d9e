// The tcp collector against real loopback sockets. Only 127.0.0.0/8 and
// ::1; every loop bounded in count and time; the one child process is killed by its PID.
// The test runs in a network namespace of its own when it may create one (root), so the
// host-wide figures hold only its sockets whatever else runs on the host. Without one, they
// are compared with `ss` taken in the same moment: ss before and after the sample must agree,
// else the comparison is retried (at most 10 times).

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/collector.h"
#include "collectors/netstat.h"
#include "collectors/tcp.h"
#include "process/run_clock.h"
#include "process/socket_owners.h"
#include "procfs/fs_root.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;
using loadwatch::test::value;

namespace {

// Before main, while the process has one thread: every socket, child and `ss` below shares it.
[[maybe_unused]] const bool kOwnNetworkNamespace = [] {
  if (::unshare(CLONE_NEWNET) != 0) return false;  // not root: the host's namespace
  // A new namespace's loopback is down; up, it has 127.0.0.1 and ::1.
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (s < 0 || ::ioctl(s, SIOCGIFFLAGS, &ifr) != 0 ||
      (ifr.ifr_flags |= IFF_UP, ::ioctl(s, SIOCSIFFLAGS, &ifr) != 0)) {
    std::perror("test_tcp_real: loopback up in the new network namespace");
    std::_Exit(1);
  }
  ::close(s);
  return true;
}();

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    reset();
    fd = o.fd;
    o.fd = -1;
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

long lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

/// `ss -Htan state STATE [filter]` line count.
long ss_count(const std::string& state, const std::string& filter = "") {
  return lines(shell("ss -Htan state " + state + (filter.empty() ? "" : " '" + filter + "'") +
                     " 2>/dev/null"));
}

Fd listen_on(int family, const char* addr, int backlog, std::uint16_t& port) {
  Fd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(s.fd >= 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    inet_pton(AF_INET, addr, &a->sin_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, addr, &a->sin6_addr);
    len = sizeof *a;
  }
  REQUIRE(::bind(s.fd, reinterpret_cast<sockaddr*>(&ss), len) == 0);
  REQUIRE(::listen(s.fd, backlog) == 0);
  REQUIRE(::getsockname(s.fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0);
  port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                 : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return s;
}

/// Connects to addr:port; with `nonblocking`, returns at once (the handshake may be pending).
Fd connect_to(int family, const char* addr, std::uint16_t port, bool nonblocking = false) {
  Fd s(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0));
  REQUIRE(s.fd >= 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, addr, &a->sin_addr);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &a->sin6_addr);
    len = sizeof *a;
  }
  int rc = ::connect(s.fd, reinterpret_cast<sockaddr*>(&ss), len);
  if (nonblocking) {
    REQUIRE((rc == 0 || errno == EINPROGRESS));
  } else {
    REQUIRE(rc == 0);
  }
  return s;
}

Fd accept_one(const Fd& listener) {
  pollfd p{listener.fd, POLLIN, 0};
  REQUIRE(::poll(&p, 1, 2000) == 1);
  Fd a(::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
  REQUIRE(a.fd >= 0);
  return a;
}

/// `n` more established connections to `listener`, both ends kept open in `socks`.
void add_pairs(std::vector<Fd>& socks, const Fd& listener, std::uint16_t port, int n) {
  for (int i = 0; i < n; ++i) {
    socks.push_back(connect_to(AF_INET, "127.0.0.1", port));
    socks.push_back(accept_one(listener));
  }
}

/// Sorted inodes of the open sockets in `socks` and of `listener`: the dump a SocketOwners
/// test stands in for.
std::vector<std::uint64_t> inodes_of(const std::vector<Fd>& socks, const Fd& listener) {
  std::vector<std::uint64_t> v;
  struct stat st {};
  for (const auto& s : socks) {
    if (s.fd >= 0 && ::fstat(s.fd, &st) == 0) v.push_back(st.st_ino);
  }
  if (::fstat(listener.fd, &st) == 0) v.push_back(st.st_ino);
  std::sort(v.begin(), v.end());
  return v;
}

/// One sample of `owners` over this process with `alive` standing for the dump: it must find
/// exactly those sockets (this process holds them all).
void expect_owns_all(SocketOwners& owners, const FsRoot& proc,
                     const std::vector<std::uint64_t>& alive,
                     const std::vector<std::pair<pid_t, long long>>& fd_counts = {}) {
  owners.update(proc, {::getpid()}, alive, fd_counts);
  std::vector<std::uint64_t> got;
  owners.tcp_inodes(::getpid(), got);
  std::sort(got.begin(), got.end());
  CHECK(got == alive);
}

/// `n` connections closed client first: the client ends go to TIME_WAIT.
void make_time_wait(int family, const char* addr, const Fd& listener, std::uint16_t port, int n) {
  for (int i = 0; i < n; ++i) {
    Fd c = connect_to(family, addr, port);
    Fd a = accept_one(listener);
    c.reset();
    a.reset();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // FIN/ACKs settle
}

/// A collector with its own options and config (they must outlive it).
struct Tcp {
  Options opt;
  Config cfg;
  FsRoot proc{"/proc"}, sys{"/sys"};
  std::unique_ptr<Collector> c;
  /// walk_budget_ms 0: every sample walks the socket tables (fresh figures every sample).
  Tcp(std::vector<std::uint16_t> ports, bool procfs, double walk_budget_ms = 0) {
    cfg.tcp.ports = std::move(ports);
    opt.tcp_force_procfs = procfs;
    c = make_tcp_collector_with_budget(CollectorEnv{opt, cfg, proc, sys}, walk_budget_ms);
  }
  std::vector<prometheus::MetricFamily> sample(std::vector<TargetState>* targets = nullptr) {
    SampleContext ctx{proc, sys, 0, {}};
    if (targets != nullptr) ctx.targets = *targets;
    MetricSink sink;
    c->collect(ctx, sink);
    if (targets != nullptr) *targets = ctx.targets;
    return sink.take();
  }
};

double port_state(const std::vector<prometheus::MetricFamily>& f, std::uint16_t port,
                  const char* side, const char* state) {
  return value(f, "loadwatch_tcp_port_connections",
               {{"port", std::to_string(port)}, {"side", side}, {"state", state}});
}

/// Every series of `name` as "labels=value" strings, for whole-family comparisons.
std::map<std::string, double> family(const std::vector<prometheus::MetricFamily>& fams,
                                     const std::string& name) {
  std::map<std::string, double> out;
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      std::string key;
      for (const auto& l : m.label) key += l.name + "=" + l.value + ",";
      out[key] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

double listen_overflows() {
  Options opt;
  Config cfg;
  FsRoot proc("/proc"), sys("/sys");
  auto c = make_netstat_collector(CollectorEnv{opt, cfg, proc, sys});
  SampleContext ctx{proc, sys, 0, {}};
  MetricSink sink;
  c->collect(ctx, sink);
  return value(sink.families(), "loadwatch_tcp_listen_overflows_total");
}

/// Ephemeral local range, as the kernel has it now.
std::pair<int, int> port_range() {
  int lo = 0, hi = 0;
  FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  REQUIRE(f != nullptr);
  REQUIRE(std::fscanf(f, "%d %d", &lo, &hi) == 2);
  std::fclose(f);
  return {lo, hi};
}

/// The ephemeral usage as the metric defines it, computed from `ss` output: max over peer
/// ip:port of sockets (TIME_WAIT included) whose local port is in the range, listeners
/// excluded.
long ss_ephemeral_max() {
  const auto [lo, hi] = port_range();
  std::map<std::string, long> per_peer;
  const std::string out = shell("ss -Htan exclude listening 2>/dev/null");
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl - pos);
    pos = nl == std::string::npos ? out.size() : nl + 1;
    char st[32], local[128], peer[128];
    long rq, sq;
    if (std::sscanf(line.c_str(), "%31s %ld %ld %127s %127s", st, &rq, &sq, local, peer) != 5) {
      continue;
    }
    std::string l = local, p = peer;
    const int lport = std::stoi(l.substr(l.rfind(':') + 1));
    if (lport < lo || lport > hi) continue;
    if (p.rfind("[::ffff:", 0) == 0) p = p.substr(8, p.find(']') - 8) + p.substr(p.find(']') + 1);
    ++per_peer[p];
  }
  long best = 0;
  for (const auto& [peer, n] : per_peer) best = std::max(best, n);
  return best;
}

/// One sample taken while `ss` reads the same ephemeral max before and after it (up to 10
/// tries), so both describe one moment: {the sample, ss's max}. Nullopt when it never settled.
using SampleAndSs = std::pair<std::vector<prometheus::MetricFamily>, long>;
std::optional<SampleAndSs> sample_beside_ss(Tcp& tcp) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    const long before = ss_ephemeral_max();
    auto f = tcp.sample();
    if (ss_ephemeral_max() == before) return std::make_pair(std::move(f), before);
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("TIME_WAIT: host-wide and per-port counts equal ss in the same moment", "[tcp][real]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 512, port);
  std::uint16_t other = 0;
  Fd l2 = listen_on(AF_INET, "127.0.0.1", 16, other);
  const int n = 200;
  make_time_wait(AF_INET, "127.0.0.1", l, port, n);

  // Several watched ports (a long bytecode), one of them holding the TIME_WAIT sockets.
  Tcp tcp({other, port, 1, 2, 3}, false);
  bool compared = false;
  for (int attempt = 0; attempt < 10 && !compared; ++attempt) {
    const long before = ss_count("time-wait");
    const long port_before = ss_count("time-wait", "( dport = :" + std::to_string(port) + " )");
    auto f = tcp.sample();
    const long after = ss_count("time-wait");
    const long port_after = ss_count("time-wait", "( dport = :" + std::to_string(port) + " )");
    if (before != after || port_before != port_after) continue;
    compared = true;
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "time_wait"}}) == before);
    CHECK(port_state(f, port, "remote", "time_wait") == port_before);
    CHECK(port_state(f, port, "local", "time_wait") == 0);  // the server ends closed second
    CHECK(port_state(f, other, "remote", "time_wait") == 0);
  }
  REQUIRE(compared);
  // loopback's tcp_tw_reuse may recycle a few 4-tuples, never most of them.
  CHECK(ss_count("time-wait", "( dport = :" + std::to_string(port) + " )") >= n * 9 / 10);
}

TEST_CASE("a backlog-8 listener that never accepts, hit by 20 clients, overflows", "[tcp][real]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 8, port);
  const double overflows_before = listen_overflows();
  REQUIRE(overflows_before >= 0);
  std::vector<Fd> clients;
  for (int i = 0; i < 20; ++i) clients.push_back(connect_to(AF_INET, "127.0.0.1", port, true));

  Tcp tcp({port}, false);
  double length = -1, max = -1;
  // The handshakes complete within milliseconds on loopback; poll (bounded) until the queue
  // is full.
  for (int i = 0; i < 40; ++i) {
    auto f = tcp.sample();
    length = value(f, "loadwatch_tcp_listen_queue_length", {{"port", std::to_string(port)}});
    max = value(f, "loadwatch_tcp_listen_queue_max", {{"port", std::to_string(port)}});
    if (length >= max && max > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(max == 8);       // min(backlog 8, net.core.somaxconn)
  CHECK(length >= max);  // the kernel admits backlog + 1 (sk_acceptq_is_full() is ">")
  CHECK(length <= max + 1);
  // Connections past the queue were refused at SYN time and retransmit: ListenOverflows.
  double overflows_after = overflows_before;
  for (int i = 0; i < 40 && overflows_after <= overflows_before; ++i) {
    overflows_after = listen_overflows();
    if (overflows_after <= overflows_before)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(overflows_after > overflows_before);
}

TEST_CASE("one destination with many client connections raises the ephemeral usage ratio",
          "[tcp][real]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 1024, port);
  const int m = 300;
  std::vector<Fd> clients, servers;
  for (int i = 0; i < m; ++i) {
    clients.push_back(connect_to(AF_INET, "127.0.0.1", port));
    servers.push_back(accept_one(l));
  }
  const auto [lo, hi] = port_range();
  const double range = hi - lo + 1;
  Tcp tcp({}, false);
  auto compared = sample_beside_ss(tcp);
  REQUIRE(compared);
  const auto& [f, ss_max] = *compared;
  CHECK(value(f, "loadwatch_tcp_ephemeral_ports") == range);
  const double ratio = value(f, "loadwatch_tcp_ephemeral_port_usage_ratio");
  CHECK(ratio * range == Approx(ss_max));
  CHECK(ratio * range >= m);  // our destination alone holds m ephemeral ports
}

TEST_CASE("TIME_WAIT toward an unwatched port counts toward the ephemeral usage", "[tcp][real]") {
  // A load generator without keep-alive: its ephemeral ports end in TIME_WAIT toward one
  // destination. The listener's port is not watched (no tcp.ports, no target).
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 512, port);
  const int n = 2000;
  make_time_wait(AF_INET, "127.0.0.1", l, port, n);
  const auto [lo, hi] = port_range();
  const double range = hi - lo + 1;
  for (bool procfs : {false, true}) {
    INFO("procfs " << procfs);
    Tcp tcp({}, procfs);
    auto compared = sample_beside_ss(tcp);
    REQUIRE(compared);
    const auto& [f, ss_max] = *compared;
    const double used = value(f, "loadwatch_tcp_ephemeral_port_usage_ratio") * range;
    CHECK(value(f, "loadwatch_tcp_ephemeral_ports") == range);
    CHECK(used == Approx(ss_max));
    CHECK(used >= n);
    CHECK(std::isnan(port_state(f, port, "remote", "time_wait")));  // not watched: no series
  }
}

TEST_CASE("deferred: the ephemeral TIME_WAIT counts are never more than 10 samples old",
          "[tcp][real][deferral]") {
  // Our destination must hold the host's largest count (earlier tests' TIME_WAIT sockets
  // live 60 s), so that the gauge follows it.
  const long others = ss_ephemeral_max();
  REQUIRE(others <= 5000);  // bounded fixture
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 512, port);
  make_time_wait(AF_INET, "127.0.0.1", l, port, static_cast<int>(others) + 300);
  const auto [lo, hi] = port_range();
  const double range = hi - lo + 1;
  // A budget no dump can meet: the TIME_WAIT dump is skipped up to its age cap (9 samples
  // at the default 1 s interval).
  Tcp tcp({}, false, 1e-9);
  const double first = value(tcp.sample(), "loadwatch_tcp_ephemeral_port_usage_ratio") * range;
  CHECK(first >= others + 300);
  make_time_wait(AF_INET, "127.0.0.1", l, port, 200);
  int refreshed_at = -1;
  for (int i = 1; i <= 10 && refreshed_at < 0; ++i) {
    const double used = value(tcp.sample(), "loadwatch_tcp_ephemeral_port_usage_ratio") * range;
    UNSCOPED_INFO("sample " << i << ": " << used << " sockets, first " << first);
    if (used >= first + 200 * 9 / 10) refreshed_at = i;
  }
  // Samples 1-9 reuse the first dump's counts; sample 10 dumps again.
  CHECK(refreshed_at == 10);
}

TEST_CASE("a target's ESTABLISHED and CLOSE_WAIT sockets, counted by state", "[tcp][real]") {
  // The target: a child that listens, accepts, and on command closes and re-accepts.
  int to_child[2], from_child[2];
  REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(from_child, O_CLOEXEC) == 0);
  const int est = 5, cw = 3;
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::alarm(60);  // never outlives the test
    int ls = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(ls, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(ls, 64) != 0) _exit(1);
    ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
    std::uint16_t port = ntohs(a.sin_port);
    std::vector<int> conns;
    if (::write(from_child[1], &port, sizeof port) != sizeof port) _exit(1);
    for (int i = 0; i < 100; ++i) {  // bounded command loop
      char cmd;
      if (::read(to_child[0], &cmd, 1) != 1) _exit(0);
      if (cmd == 'a') conns.push_back(::accept(ls, nullptr, nullptr));  // accept one
      if (cmd == 'c' && !conns.empty()) {                               // close the oldest
        ::close(conns.front());
        conns.erase(conns.begin());
      }
      char ok = 'k';
      if (::write(from_child[1], &ok, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  auto command = [&](char c) {
    REQUIRE(::write(to_child[1], &c, 1) == 1);
    char ok = 0;
    REQUIRE(::read(from_child[0], &ok, 1) == 1);
  };
  std::uint16_t port = 0;
  REQUIRE(::read(from_child[0], &port, sizeof port) == sizeof port);

  std::vector<Fd> clients;
  for (int i = 0; i < cw + est; ++i) {
    clients.push_back(connect_to(AF_INET, "127.0.0.1", port));
    command('a');
  }
  // Our ends of the first `cw` connections close: the child's ends go to CLOSE_WAIT.
  for (int i = 0; i < cw; ++i) clients[i].reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  std::vector<TargetState> targets(2);
  targets[0].name = "app";
  targets[0].pids = {child};
  targets[0].up = true;
  targets[1].name = "down";  // no processes: no per-target series, no ports
  Tcp tcp({}, false);
  auto f = tcp.sample(&targets);
  auto proc_state = [&](const char* target, const char* state) {
    return value(f, "loadwatch_process_tcp_connections", {{"target", target}, {"state", state}});
  };
  CHECK(proc_state("app", "established") == est);
  CHECK(proc_state("app", "close_wait") == cw);
  CHECK(proc_state("app", "listen") == 1);
  CHECK(proc_state("app", "time_wait") == 0);
  CHECK(std::isnan(proc_state("down", "established")));  // absent while down, not 0
  CHECK(targets[0].listen_ports == std::vector<std::uint16_t>{port});
  CHECK(targets[1].listen_ports.empty());
  // The target's listening port is watched without being configured.
  CHECK(port_state(f, port, "local", "established") == est);
  CHECK(port_state(f, port, "local", "close_wait") == cw);
  CHECK(port_state(f, port, "remote", "fin_wait2") == cw);

  // Churn with a constant fd count: the child closes its 2 oldest (CLOSE_WAIT) sockets and
  // accepts 2 new connections, which take the freed fd numbers. The cache must notice.
  for (int i = 0; i < 2; ++i) command('c');
  for (int i = 0; i < 2; ++i) {
    clients.push_back(connect_to(AF_INET, "127.0.0.1", port));
    command('a');
  }
  f = tcp.sample(&targets);
  CHECK(proc_state("app", "established") == est + 2);
  CHECK(proc_state("app", "close_wait") == cw - 2);
  // Nothing changed: same figures again (served from the cache).
  f = tcp.sample(&targets);
  CHECK(proc_state("app", "established") == est + 2);
  CHECK(proc_state("app", "close_wait") == cw - 2);

  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(to_child[1]);
  ::close(from_child[0]);
  // A vanished target process is not an error: its sockets just stop counting.
  f = tcp.sample(&targets);
  CHECK(proc_state("app", "established") == 0);
}

TEST_CASE("socket owner cache: skips unchanged processes, follows churn exactly",
          "[tcp][real][owners]") {
  // This process is the target: compare the cache with a full readlink scan.
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 64, port);
  std::vector<Fd> socks;
  add_pairs(socks, l, port, 40);
  FsRoot proc("/proc");
  SocketOwners owners;
  // Exactly our sockets stand for the dump (the cache only tests membership).
  auto check = [&]() { expect_owns_all(owners, proc, inodes_of(socks, l)); };
  check();
  const auto listings = owners.stats().listings;
  const auto skipped = owners.stats().skipped;
  const auto reads0 = owners.stats().readlinks;
  check();  // nothing changed: no listing, only the rolling check (1/32 of ~90 fds)
  CHECK(owners.stats().listings == listings);
  CHECK(owners.stats().skipped == skipped + 1);
  CHECK(owners.stats().readlinks - reads0 <= 4);
  // Close 10 sockets and open 10 new ones: same fd count, numbers reused.
  for (int i = 0; i < 10; ++i) socks[i].reset();
  for (int i = 0; i < 5; ++i) {
    socks[2 * i] = connect_to(AF_INET, "127.0.0.1", port);
    socks[2 * i + 1] = accept_one(l);
  }
  const auto reads = owners.stats().readlinks;
  check();
  // Only the suspects and one verification slice were read, not all ~90 fds.
  CHECK(owners.stats().readlinks - reads < 40);
  // More sockets: the count grows, a listing finds the new numbers.
  add_pairs(socks, l, port, 5);
  check();
}

TEST_CASE("socket owner cache: a quiet process is verified a round after it ran, then rarely",
          "[tcp][real][owners]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 64, port);
  std::vector<Fd> socks;
  add_pairs(socks, l, port, 40);
  const std::vector<std::uint64_t> alive = inodes_of(socks, l);
  FsRoot proc("/proc");
  SocketOwners owners;
  const pid_t self = ::getpid();
  owners.update(proc, {self}, alive);  // it ran: a whole round of slices is owed
  std::size_t fds = 0;                 // this process's fds, the listing's own left out
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      fds += e->d_name[0] != '.' && std::atoi(e->d_name) != ::dirfd(d);
    ::closedir(d);
  }
  REQUIRE(fds > 80);
  const auto read_while_quiet = [&](unsigned samples) {
    const auto before = owners.stats().readlinks;
    for (unsigned i = 0; i < samples; ++i) owners.update(proc, {self}, alive, {}, {self});
    return owners.stats().readlinks - before;
  };
  // The owed round reads every cached fd once (give or take the test's own fds).
  CHECK(read_while_quiet(SocketOwners::kVerifySlices - 1) + 8 >= fds);
  // Then one slice every kQuietVerifyEvery samples at most.
  const unsigned slice =
      (static_cast<unsigned>(fds) + SocketOwners::kVerifySlices - 1) / SocketOwners::kVerifySlices;
  CHECK(read_while_quiet(4 * SocketOwners::kQuietVerifyEvery) <= 4 * slice + 4);
  // A socket in the dump that none of its cached fds explains: a quiet process opened none,
  // so its plain files are not re-read.
  std::vector<std::uint64_t> with_stranger = alive;
  with_stranger.insert(with_stranger.begin(), 1);
  CHECK(read_while_quiet(0) == 0);
  {
    const auto r0 = owners.stats().readlinks;
    owners.update(proc, {self}, with_stranger, {}, {self});
    CHECK(owners.stats().readlinks - r0 <= slice);
  }
  // It ran again: the next sample verifies a slice, and the answer is still exact.
  const auto before = owners.stats().readlinks;
  owners.update(proc, {self}, alive);
  CHECK(owners.stats().readlinks > before);
  std::vector<std::uint64_t> got;
  owners.tcp_inodes(self, got);
  std::sort(got.begin(), got.end());
  CHECK(got == alive);
}

TEST_CASE("socket owner cache: walks samples apart count samples, and a run between them",
          "[tcp][real][owners]") {
  // Deferred walks come every ~10 samples (docs/tcp.md): the rolling check's spans are
  // samples, and a process that ran at any sample since the last walk is not quiet, even when
  // it is at the walk's own sample. The clock stands for the targets collector's. The truth is
  // a full readlink scan of this process's fds.
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 64, port);
  std::vector<Fd> socks;
  add_pairs(socks, l, port, 40);
  Fd file(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(file.fd >= 0);
  const std::vector<std::uint64_t> alive = inodes_of(socks, l);
  FsRoot proc("/proc");
  RunClock clock;
  SocketOwners owners(FdBudget::shared(), true, clock);
  const pid_t self = ::getpid();
  const auto truth = [&]() {
    std::vector<std::uint64_t> v;
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (const dirent* e = ::readdir(d)) {
      char link[64];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link - 1);
      if (n <= 0 || std::atoi(e->d_name) == ::dirfd(d)) continue;
      link[n] = '\0';
      std::uint64_t ino = 0;
      if (std::sscanf(link, "socket:[%" SCNu64 "]", &ino) == 1 &&
          std::binary_search(alive.begin(), alive.end(), ino)) {
        v.push_back(ino);
      }
    }
    ::closedir(d);
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto cached = [&]() {
    std::vector<std::uint64_t> got;
    owners.tcp_inodes(self, got);
    std::sort(got.begin(), got.end());
    return got;
  };
  // A walk after `gap` samples, quiet at its own sample; `ran_between`: it ran at one before.
  const auto walk = [&](unsigned gap, bool ran_between = false) {
    const auto before = owners.stats().readlinks;
    for (unsigned i = 0; i < gap; ++i) {
      clock.tick();
      if (ran_between && i == 0) clock.ran(self);
    }
    owners.update(proc, {self}, alive, {}, {self});
    return owners.stats().readlinks - before;
  };
  clock.tick();
  clock.ran(self);
  owners.update(proc, {self}, alive);  // it ran: read whole
  CHECK(cached() == truth());
  const std::size_t fds = 81 + 1;  // the sockets, the listener and /dev/null, at least
  const std::size_t slice = (fds + SocketOwners::kVerifySlices - 1) / SocketOwners::kVerifySlices;

  // Verified for the 32 samples after it ran: 4 walks 10 samples apart read a whole round.
  std::uint64_t reads = 0;
  for (int i = 0; i < 4; ++i) reads += walk(10);
  CHECK(reads + 8 >= fds);

  // Quiet since: one slice every 8 samples. A plain file's fd now names one of the sockets
  // (dup2: the fd count stays, the dump has no new socket): only the rolling check sees it,
  // within a round of 256 samples, 26 walks 10 samples apart.
  REQUIRE(::dup2(socks[0].fd, file.fd) == file.fd);
  const std::vector<std::uint64_t> now = truth();
  REQUIRE(now.size() == alive.size() + 1);
  reads = 0;
  bool seen = false;
  for (int i = 0; i < 27 && !seen; ++i) {
    reads += walk(10);
    seen = cached() == now;
  }
  CHECK(seen);
  CHECK(reads <= (27 * 10 / SocketOwners::kQuietVerifyEvery + 2) * (slice + 1));

  // It ran between two walks, quiet at the second's sample: a whole round again within the
  // 32 samples after that run (8 walks 4 samples apart).
  reads = walk(4, true);
  for (int i = 0; i < 7; ++i) reads += walk(4);
  CHECK(reads + 8 >= fds);
  CHECK(cached() == truth());
}

TEST_CASE("socket owner cache: a new socket nobody holds re-reads the plain files, not the slice",
          "[tcp][real][owners]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 128, port);
  std::vector<Fd> socks;
  add_pairs(socks, l, port, 100);
  const std::vector<std::uint64_t> alive = inodes_of(socks, l);
  REQUIRE(alive.size() == 201);
  FsRoot proc("/proc");
  SocketOwners owners;
  owners.update(proc, {::getpid()}, alive);  // every socket is ours: no second pass
  owners.update(proc, {::getpid()}, alive);

  // This process's fds as the cache holds them (the listing's own directory fd left out).
  std::size_t fds = 0, files = 0;
  {
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || std::atoi(e->d_name) == ::dirfd(d)) continue;
      char link[64];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link);
      REQUIRE(n > 0);
      ++fds;
      files += std::string_view(link, static_cast<std::size_t>(n)).rfind("socket:[", 0) != 0;
    }
    ::closedir(d);
  }
  REQUIRE(files > 0);
  REQUIRE(files <= 256);  // the second pass covers this process

  // A socket in the dump that no process of ours holds: the second pass re-reads the plain
  // files; the rolling slice was read by the first pass of the same sample, not again.
  std::vector<std::uint64_t> with_stranger = alive;
  with_stranger.insert(with_stranger.begin(), 1);
  const auto reads = owners.stats().readlinks;
  owners.update(proc, {::getpid()}, with_stranger);
  CHECK(owners.stats().readlinks - reads <=
        files + (fds + SocketOwners::kVerifySlices - 1) / SocketOwners::kVerifySlices);
  std::vector<std::uint64_t> got;
  owners.tcp_inodes(::getpid(), got);
  std::sort(got.begin(), got.end());
  CHECK(got == alive);  // the stranger is nobody's
}

TEST_CASE("socket owner cache: past the dirfd cap, the process with many fds keeps one",
          "[tcp][real][owners]") {
  // kMaxDirFds sleepers with a few fds take every kept /proc/PID/fd fd; a holder of 300 fds,
  // listed last, then takes one over. The truth: this process's own fds in /proc.
  std::vector<pid_t> kids;
  auto spawn = [&](int extra_fds) {
    int ready[2];
    REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (int i = 0; i < extra_fds; ++i) ::open("/dev/null", O_RDONLY);
      if (::write(ready[1], "x", 1) != 1) _exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char x = 0;
    REQUIRE(::read(ready[0], &x, 1) == 1);
    ::close(ready[0]);
    kids.push_back(pid);
  };
  for (std::size_t i = 0; i < SocketOwners::kMaxDirFds; ++i) spawn(0);
  spawn(300);
  const pid_t holder = kids.back();
  const auto kept_dirfd_of = [](pid_t pid) {
    const std::string want = "/proc/" + std::to_string(pid) + "/fd";
    bool found = false;
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (const dirent* e = ::readdir(d)) {
      char link[128];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link);
      found = found || (n > 0 && std::string_view(link, static_cast<std::size_t>(n)) == want);
    }
    ::closedir(d);
    return found;
  };
  {
    FdBudget budget(4096);
    SocketOwners owners(budget);
    FsRoot proc("/proc");
    owners.update(proc, kids, {});
    CHECK(kept_dirfd_of(kids.front()));
    CHECK(kept_dirfd_of(holder));  // moved over at the end of the first walk
    CHECK(budget.used() == static_cast<long>(SocketOwners::kMaxDirFds));
    owners.update(proc, kids, {});
    CHECK(kept_dirfd_of(holder));
  }
  for (pid_t pid : kids) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

TEST_CASE("socket owner cache where the kernel gives no fd count (Linux < 6.2)",
          "[tcp][real][owners]") {
  // The targets collector's count of this sample spares the listing while it matches the
  // cache; a socket opened after that count was taken is still found, by the second pass.
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 64, port);
  std::vector<Fd> socks;
  add_pairs(socks, l, port, 20);
  FsRoot proc("/proc");
  SocketOwners owners(FdBudget::shared(), /*fd_dir_size=*/false);
  const pid_t self = ::getpid();
  auto count_fds = [] {  // as the targets collector counts: a listing (its own fd left out)
    long long n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d != nullptr);
    while (const dirent* e = ::readdir(d)) {
      n += e->d_name[0] != '.' && std::atoi(e->d_name) != ::dirfd(d);
    }
    ::closedir(d);
    return n;
  };
  auto update = [&](const std::vector<std::pair<pid_t, long long>>& counts) {
    expect_owns_all(owners, proc, inodes_of(socks, l), counts);
  };
  update({{self, count_fds()}});  // first sample: lists
  update({{self, count_fds()}});  // the cache holds the directory fd opened by the first

  auto listings = owners.stats().listings;
  update({{self, count_fds()}});
  CHECK(owners.stats().listings == listings);  // the count matches: no listing
  update({});
  CHECK(owners.stats().listings == listings + 1);  // no count at all: lists, as before

  // New sockets opened after the count was taken, but before the dump. With over 256 plain
  // files the second pass does not re-read files, so only the early count makes it list.
  std::vector<Fd> files;
  for (int i = 0; i < 300; ++i) files.emplace_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  update({{self, count_fds()}});
  const long long before = count_fds();
  add_pairs(socks, l, port, 2);
  listings = owners.stats().listings;
  update({{self, before}});  // the count matches the cache, the dump has strangers
  CHECK(owners.stats().listings == listings + 1);
}

TEST_CASE("IPv6 ::1 sockets are counted", "[tcp][real]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET6, "::1", 64, port);
  std::vector<Fd> socks;
  for (int i = 0; i < 3; ++i) {
    socks.push_back(connect_to(AF_INET6, "::1", port));
    socks.push_back(accept_one(l));
  }
  make_time_wait(AF_INET6, "::1", l, port, 4);
  for (bool procfs : {false, true}) {
    Tcp tcp({port}, procfs);
    auto f = tcp.sample();
    INFO("procfs " << procfs);
    CHECK(port_state(f, port, "local", "listen") == 1);
    CHECK(port_state(f, port, "local", "established") == 3);
    CHECK(port_state(f, port, "remote", "established") == 3);
    CHECK(port_state(f, port, "remote", "time_wait") ==
          ss_count("time-wait", "( dport = :" + std::to_string(port) + " )"));
    CHECK(port_state(f, port, "remote", "time_wait") >= 3);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "established"}}) >= 6);
    CHECK(value(f, "loadwatch_tcp_listen_queue_length", {{"port", std::to_string(port)}}) == 0);
  }
}

TEST_CASE("the /proc fallback gives the same numbers as netlink", "[tcp][real]") {
  std::uint16_t p4 = 0, p6 = 0, pfull = 0;
  Fd l4 = listen_on(AF_INET, "127.0.0.1", 64, p4);
  Fd l6 = listen_on(AF_INET6, "::1", 64, p6);
  Fd lfull = listen_on(AF_INET, "127.0.0.1", 2, pfull);
  std::vector<Fd> socks;
  for (int i = 0; i < 4; ++i) {
    socks.push_back(connect_to(AF_INET, "127.0.0.1", p4));
    socks.push_back(accept_one(l4));
    socks.push_back(connect_to(AF_INET6, "::1", p6));
    socks.push_back(accept_one(l6));
  }
  for (int i = 0; i < 5; ++i) socks.push_back(connect_to(AF_INET, "127.0.0.1", pfull, true));
  socks[0].reset();  // a CLOSE_WAIT / FIN_WAIT2 pair
  make_time_wait(AF_INET, "127.0.0.1", l4, p4, 30);
  make_time_wait(AF_INET6, "::1", l6, p6, 10);

  Tcp netlink({p4, p6, pfull}, false), procfs({p4, p6, pfull}, true);
  bool same = false;
  for (int attempt = 0; attempt < 10 && !same; ++attempt) {
    auto a = netlink.sample();
    auto b = procfs.sample();
    auto c = netlink.sample();  // the host did not change in between when a == c
    if (family(a, "loadwatch_tcp_connections") != family(c, "loadwatch_tcp_connections") ||
        family(a, "loadwatch_tcp_ephemeral_port_usage_ratio") !=
            family(c, "loadwatch_tcp_ephemeral_port_usage_ratio")) {
      continue;
    }
    same = true;
    for (const char* name : {"loadwatch_tcp_connections", "loadwatch_tcp_port_connections",
                             "loadwatch_tcp_listen_queue_length", "loadwatch_tcp_ephemeral_ports",
                             "loadwatch_tcp_ephemeral_port_usage_ratio"}) {
      INFO(name);
      CHECK(family(a, name) == family(b, name));
      CHECK_FALSE(family(a, name).empty());
    }
    // The one figure /proc/net/tcp lacks.
    CHECK(family(a, "loadwatch_tcp_listen_queue_max").size() == 3);
    CHECK(family(b, "loadwatch_tcp_listen_queue_max").empty());
    CHECK(port_state(a, p4, "local", "close_wait") == 1);
    CHECK(port_state(a, p4, "remote", "fin_wait2") == 1);
    CHECK(port_state(a, pfull, "local", "established") == 3);  // backlog 2 + 1
  }
  REQUIRE(same);
}

TEST_CASE("deferred walks: TIME_WAIT and accept queues stay fresh, the rest is the last walk's",
          "[tcp][real][deferral]") {
  std::uint16_t port = 0;
  Fd l = listen_on(AF_INET, "127.0.0.1", 64, port);
  std::uint16_t twport = 0;
  Fd ltw = listen_on(AF_INET, "127.0.0.1", 64, twport);
  // This process is the target, so its listeners' ports are watched.
  std::vector<TargetState> targets(1);
  targets[0].name = "self";
  targets[0].pids = {::getpid()};
  targets[0].up = true;
  // A budget no walk can meet: after a walk, the next 14 samples skip it.
  Tcp tcp({}, false, 1e-9);
  auto f = tcp.sample(&targets);
  CHECK(port_state(f, port, "local", "established") == 0);
  CHECK(value(f, "loadwatch_tcp_listen_queue_length", {{"port", std::to_string(port)}}) == 0);
  const double est0 = value(f, "loadwatch_tcp_connections", {{"state", "established"}});

  // Two connections wait in the accept queue; new TIME_WAIT sockets appear.
  std::vector<Fd> clients;
  for (int i = 0; i < 2; ++i) clients.push_back(connect_to(AF_INET, "127.0.0.1", port));
  make_time_wait(AF_INET, "127.0.0.1", ltw, twport, 20);
  bool compared = false;
  for (int attempt = 0; attempt < 5 && !compared; ++attempt) {
    const long before = ss_count("time-wait");
    f = tcp.sample(&targets);  // deferred: no walk
    const long after = ss_count("time-wait");
    CHECK(value(f, "loadwatch_tcp_listen_queue_length", {{"port", std::to_string(port)}}) == 2);
    CHECK(value(f, "loadwatch_process_tcp_connections",
                {{"target", "self"}, {"state", "listen"}}) == 2);
    // The last walk's figures: the 4 new established sockets are not seen yet.
    CHECK(port_state(f, port, "local", "established") == 0);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "established"}}) == est0);
    if (before != after) continue;
    compared = true;
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "time_wait"}}) == before);
  }
  CHECK(compared);
  // A walk comes within 15 samples.
  bool walked = false;
  for (int i = 0; i < 15 && !walked; ++i) {
    f = tcp.sample(&targets);
    walked = port_state(f, port, "local", "established") == 2;
  }
  CHECK(walked);
  CHECK(port_state(f, port, "remote", "established") == 2);
}
