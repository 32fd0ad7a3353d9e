// Network parsers and collectors: /proc/net/{tcp,tcp6,netstat,snmp,sockstat,dev},
// sysctls, netlink sock_diag replies from encoded byte fixtures, the inet_diag port-filter
// bytecode, and the per-port / ephemeral tally. Fixtures: tests/fixtures/proc (captured by
// tests/fixtures/capture-host.sh) and tests/fixtures/net (captured by
// tests/fixtures/net/capture-net.py from real loopback sockets: the same moment seen through
// netlink and through /proc).

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/collector.h"
#include "collectors/conntrack.h"
#include "collectors/netdev.h"
#include "collectors/netstat.h"
#include "collectors/sockstat.h"
#include "collectors/sysctl.h"
#include "collectors/tcp.h"
#include "collectors/tcp_ephemeral_use.h"
#include "collectors/tcp_tally.h"
#include "procfs/fs_root.h"
#include "procfs/netdev.h"
#include "procfs/netstat.h"
#include "procfs/proc_net_tcp.h"
#include "procfs/sock_diag.h"
#include "procfs/sockstat.h"
#include "procfs/sysctl.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/sample_values.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
using loadwatch::test::value;

namespace {

const std::string kProc = fixture_path("proc");
const std::string kNet = fixture_path("net");

std::string slurp(const std::string& path) {
  std::string out;
  REQUIRE(read_whole_file(path, out) == 0);
  return out;
}

struct Collect final : TcpSocketVisitor {
  std::vector<TcpSocket> all;
  void on_socket(const TcpSocket& s) override { all.push_back(s); }
};

std::map<int, int> by_state(const std::vector<TcpSocket>& v) {
  std::map<int, int> m;
  for (const auto& s : v) ++m[s.state];
  return m;
}

std::size_t series(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return f.metric.size();
  }
  return 0;
}

std::vector<prometheus::MetricFamily> run(Collector& c, const FsRoot& proc,
                                          std::vector<TargetState> targets = {}) {
  FsRoot sys("/nonexistent-sys");
  SampleContext ctx{proc, sys, 0, {}};
  ctx.targets = std::move(targets);
  MetricSink sink;
  c.collect(ctx, sink);
  return sink.take();
}

TcpSocket sock(std::uint8_t state, std::uint16_t sport, std::uint16_t dport,
               const char* daddr4 = "127.0.0.1") {
  TcpSocket s;
  s.family = AF_INET;
  s.state = state;
  s.sport = sport;
  s.dport = dport;
  inet_pton(AF_INET, daddr4, s.daddr.data());
  return s;
}

}  // namespace

// ---------------------------------------------------------------- /proc/net/tcp, tcp6

TEST_CASE("proc/net/tcp fixture: states, time-wait mini sockets, endpoints", "[net][tcp]") {
  Collect c;
  parse_proc_net_tcp(slurp(kProc + "/net/tcp"), AF_INET, c);
  // Captured host: 3 listeners and 13 TIME_WAIT sockets (`st` 0A and 06).
  REQUIRE(c.all.size() == 16);
  CHECK(by_state(c.all) == std::map<int, int>{{kTcpTimeWait, 13}, {kTcpListen, 3}});
  for (const auto& s : c.all) {
    CHECK(s.timewait_minisock == (s.state == kTcpTimeWait));  // timer column 03
    CHECK_FALSE(s.wqueue_known);
  }
  // "   0: 00000000:07E8 00000000:0000 0A ... 131": 0.0.0.0:2024 listening, inode 131.
  CHECK(c.all[0].sport == 2024);
  CHECK(c.all[0].dport == 0);
  CHECK(c.all[0].inode == 131);
  // "0100007F:E52A 0100007F:5C30 06": 127.0.0.1:58666 -> 127.0.0.1:23600 in TIME_WAIT.
  const TcpSocket& tw = c.all[3];
  CHECK(tw.sport == 58666);
  CHECK(tw.dport == 23600);
  char text[INET_ADDRSTRLEN];
  CHECK(std::string(inet_ntop(AF_INET, tw.saddr.data(), text, sizeof text)) == "127.0.0.1");
  // "020200C0:975E 507100CB:0050": 192.0.2.2 -> 203.0.113.80:80.
  const TcpSocket& ext = c.all[15];
  CHECK(std::string(inet_ntop(AF_INET, ext.saddr.data(), text, sizeof text)) == "192.0.2.2");
  CHECK(std::string(inet_ntop(AF_INET, ext.daddr.data(), text, sizeof text)) == "203.0.113.80");
  CHECK(ext.dport == 80);
}

TEST_CASE("proc/net/tcp6 lines: addresses word by word, header-only file", "[net][tcp]") {
  Collect empty;
  parse_proc_net_tcp(slurp(kProc + "/net/tcp6"), AF_INET6, empty);
  CHECK(empty.all.empty());

  // A listener on [::1]:3000 with 2 connections waiting in its accept queue, uid 1000.
  const std::string line =
      "   0: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A "
      "00000000:00000002 00:00000000 00000000  1000        0 424242 1 0000000000000000 100 0 0 "
      "10 0\n";
  Collect c;
  parse_proc_net_tcp(line, AF_INET6, c);
  REQUIRE(c.all.size() == 1);
  const TcpSocket& s = c.all[0];
  char text[INET6_ADDRSTRLEN];
  CHECK(std::string(inet_ntop(AF_INET6, s.saddr.data(), text, sizeof text)) == "::1");
  CHECK(s.family == AF_INET6);
  CHECK(s.sport == 3000);
  CHECK(s.state == kTcpListen);
  CHECK(s.rqueue == 2);
  CHECK(s.uid == 1000);
  CHECK(s.inode == 424242);
}

TEST_CASE("proc/net/tcp: malformed lines throw, never crash", "[net][tcp]") {
  const char* bad[] = {
      "   0: 0100007F:0BB8 00000000:0000 0A\n",  // truncated
      "   0: 0100007F0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1\n",
      "   0: 0100007F:0BB8 00000000:0000 ZZ 00000000:00000000 00:00000000 00000000 0 0 1\n",
      "   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 x1\n",
      "   0 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1\n",
  };
  for (const char* line : bad) {
    Collect c;
    CHECK_THROWS_AS(parse_proc_net_tcp(line, AF_INET, c), std::runtime_error);
  }
  // An IPv4-width address in tcp6 is malformed too.
  Collect c;
  CHECK_THROWS(parse_proc_net_tcp(
      "   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1\n",
      AF_INET6, c));
}

TEST_CASE("read_proc_net_tcp reads in chunks and matches the whole-file parse", "[net][tcp]") {
  // A 60,000-line file (~9 MiB) spans many 64 KiB chunks, with lines cut at chunk edges.
  const std::string fixture = slurp(kProc + "/net/tcp");
  const std::string header = fixture.substr(0, fixture.find('\n') + 1);
  const std::string body = fixture.substr(header.size());
  char dir[] = "/tmp/loadwatch-net-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string root = dir;
  REQUIRE(::mkdir((root + "/net").c_str(), 0700) == 0);
  std::string big = header;
  for (int i = 0; i < 3750; ++i) big += body;  // 16 sockets a copy
  {
    FILE* f = std::fopen((root + "/net/tcp").c_str(), "w");
    REQUIRE(f != nullptr);
    std::fwrite(big.data(), 1, big.size(), f);
    std::fclose(f);
  }
  Collect chunked, whole;
  std::string buf;
  CHECK(read_proc_net_tcp(FsRoot(root), AF_INET, chunked, buf) == 0);
  parse_proc_net_tcp(big, AF_INET, whole);
  CHECK(whole.all.size() == 60000);
  REQUIRE(chunked.all.size() == whole.all.size());
  for (std::size_t i = 0; i < whole.all.size(); i += 997) {
    CHECK(chunked.all[i].inode == whole.all[i].inode);
    CHECK(chunked.all[i].sport == whole.all[i].sport);
  }
  CHECK(read_proc_net_tcp(FsRoot(root), AF_INET6, chunked, buf) == ENOENT);
  std::remove((root + "/net/tcp").c_str());
  ::rmdir((root + "/net").c_str());
  ::rmdir(root.c_str());
}

// ---------------------------------------------------------------- netlink replies

namespace {

using Key = std::tuple<int, int, bool, int, int, std::uint64_t, std::uint32_t, std::uint32_t>;

std::vector<Key> keys(const std::vector<TcpSocket>& v) {
  std::vector<Key> k;
  for (const auto& s : v) {
    k.emplace_back(s.family, s.state, s.timewait_minisock, s.sport, s.dport, s.inode, s.uid,
                   s.state == kTcpListen ? s.rqueue : 0);
  }
  std::sort(k.begin(), k.end());
  return k;
}

/// Aligned copy of a fixture file (netlink messages are read in place).
std::vector<std::uint8_t> bytes_of(const std::string& path) {
  const std::string s = slurp(path);
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("sock_diag replies from the byte fixture equal the /proc capture of that moment",
          "[net][netlink]") {
  Collect nl, pf;
  CHECK(parse_sock_diag_messages(bytes_of(kNet + "/sock_diag_inet.bin"), nl) == 1);
  CHECK(parse_sock_diag_messages(bytes_of(kNet + "/sock_diag_inet6.bin"), nl) == 1);
  parse_proc_net_tcp(slurp(kNet + "/tcp"), AF_INET, pf);
  parse_proc_net_tcp(slurp(kNet + "/tcp6"), AF_INET6, pf);
  // 33 sockets on the scenario's ports (the capture's bytecode filter dropped the rest).
  REQUIRE(nl.all.size() == 33);
  CHECK(keys(nl.all) == keys(pf.all));
  // Both families in one TCPDIAG_GETSOCK dump: the same sockets, in hash-table order.
  Collect compat;
  CHECK(parse_sock_diag_messages(bytes_of(kNet + "/sock_diag_compat.bin"), compat) == 1);
  CHECK(keys(compat.all) == keys(nl.all));

  // The capture-net.py scenario, as netlink reports it.
  auto on = [&](std::uint16_t port) {
    std::map<std::string, int> m;
    for (const auto& s : nl.all) {
      if (s.sport == port) ++m["local_" + std::string(tcp_state_name(s.state))];
      if (s.dport == port) ++m["remote_" + std::string(tcp_state_name(s.state))];
    }
    return m;
  };
  // 29101: backlog 4, never accepting, 6 clients: 5 queued (backlog + 1), 1 in SYN_SENT.
  CHECK(on(29101) == std::map<std::string, int>{{"local_listen", 1},
                                                {"local_established", 5},
                                                {"remote_established", 5},
                                                {"remote_syn_sent", 1}});
  for (const auto& s : nl.all) {
    if (s.sport == 29101 && s.state == kTcpListen) {
      CHECK(s.rqueue == 5);  // sk_ack_backlog
      CHECK(s.wqueue == 4);  // sk_max_ack_backlog
    }
  }
  // 29102: 3 established pairs, 1 CLOSE_WAIT whose client end is a FIN_WAIT2 mini socket,
  // 5 client-side TIME_WAIT.
  CHECK(on(29102) == std::map<std::string, int>{{"local_listen", 1},
                                                {"local_established", 3},
                                                {"remote_established", 3},
                                                {"local_close_wait", 1},
                                                {"remote_fin_wait2", 1},
                                                {"remote_time_wait", 5}});
  for (const auto& s : nl.all) {
    if (s.dport == 29102 && s.state == kTcpFinWait2) CHECK(s.timewait_minisock);
    if (s.state == kTcpTimeWait) CHECK(s.timewait_minisock);
    if (s.state == kTcpEstablished) CHECK_FALSE(s.timewait_minisock);
  }
  // 29103 on [::1]: 2 established pairs, 2 TIME_WAIT.
  auto v6 = on(29103);
  CHECK(v6 == std::map<std::string, int>{{"local_listen", 1},
                                         {"local_established", 2},
                                         {"remote_established", 2},
                                         {"remote_time_wait", 2}});
  for (const auto& s : nl.all) {
    if (s.sport == 29103) CHECK(s.family == AF_INET6);
  }
}

TEST_CASE("sock_diag parser: errors, acks, truncation, foreign messages", "[net][netlink]") {
  alignas(4) std::uint8_t buf[256] = {};
  auto* nlh = reinterpret_cast<nlmsghdr*>(buf);
  Collect c;

  SECTION("NLMSG_ERROR carries a negative errno") {
    nlh->nlmsg_len = NLMSG_LENGTH(sizeof(nlmsgerr));
    nlh->nlmsg_type = NLMSG_ERROR;
    nlmsgerr err{};
    err.error = -EPERM;
    std::memcpy(NLMSG_DATA(nlh), &err, sizeof err);
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == -EPERM);
  }
  SECTION("NLMSG_DONE ends the dump; a negative status in it is an error") {
    nlh->nlmsg_len = NLMSG_LENGTH(sizeof(int));
    nlh->nlmsg_type = NLMSG_DONE;
    int status = 0;
    std::memcpy(NLMSG_DATA(nlh), &status, sizeof status);
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == 1);
    status = -EINTR;
    std::memcpy(NLMSG_DATA(nlh), &status, sizeof status);
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == -EINTR);
  }
  SECTION("a message shorter than inet_diag_msg is malformed") {
    nlh->nlmsg_len = NLMSG_LENGTH(8);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == -EBADMSG);
  }
  SECTION("a truncated buffer is malformed, a whole message is parsed") {
    nlh->nlmsg_len = NLMSG_LENGTH(sizeof(inet_diag_msg));
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    inet_diag_msg m{};
    m.idiag_family = AF_INET;
    m.idiag_state = kTcpListen;
    m.id.idiag_sport = htons(8080);
    m.idiag_rqueue = 3;
    m.idiag_wqueue = 511;
    m.idiag_inode = 77;
    std::memcpy(NLMSG_DATA(nlh), &m, sizeof m);
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len - 4}, c) == -EBADMSG);
    CHECK(c.all.empty());
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == 0);  // no DONE yet
    REQUIRE(c.all.size() == 1);
    CHECK(c.all[0].sport == 8080);
    CHECK(c.all[0].rqueue == 3);
    CHECK(c.all[0].wqueue == 511);
    CHECK(c.all[0].inode == 77);
    CHECK_FALSE(c.all[0].timewait_minisock);
  }
  SECTION("other message types are skipped") {
    nlh->nlmsg_len = NLMSG_LENGTH(4);
    nlh->nlmsg_type = NLMSG_NOOP;
    CHECK(parse_sock_diag_messages({buf, nlh->nlmsg_len}, c) == 0);
    CHECK(c.all.empty());
  }
  SECTION("the byte fixture cut anywhere never crashes") {
    auto bytes = bytes_of(kNet + "/sock_diag_inet.bin");
    for (std::size_t cut = 0; cut < bytes.size(); cut += 52) {
      Collect part;
      int rc = parse_sock_diag_messages({bytes.data(), cut}, part);
      CHECK(rc <= 1);
    }
  }
}

// ---------------------------------------------------------------- port filter bytecode

TEST_CASE("port filter bytecode accepts exactly the watched ports and passes the audit",
          "[net][bytecode]") {
  CHECK(build_port_filter({}).empty());
  CHECK(build_port_filter({0}).empty());
  for (const std::vector<std::uint16_t>& ports : {std::vector<std::uint16_t>{3000},
                                                  {3000, 2525},
                                                  {2525, 3000, 2525, 0, 65535},
                                                  std::vector<std::uint16_t>(1, 1)}) {
    const auto bc = build_port_filter(ports);
    CHECK(audit_port_filter(bc));
    const std::set<std::uint16_t> want(ports.begin(), ports.end());
    for (std::uint32_t sp : {0u, 1u, 80u, 2524u, 2525u, 3000u, 40000u, 65535u}) {
      for (std::uint32_t dp : {0u, 1u, 2525u, 3000u, 3001u, 65535u}) {
        const bool expect = (sp != 0 && want.count(static_cast<std::uint16_t>(sp))) ||
                            (dp != 0 && want.count(static_cast<std::uint16_t>(dp)));
        CHECK(run_port_filter(bc, static_cast<std::uint16_t>(sp), static_cast<std::uint16_t>(dp)) ==
              expect);
      }
    }
  }
  // The largest filter: every jump still fits the 16-bit "no" field.
  std::vector<std::uint16_t> many;
  for (std::uint16_t p = 1000; many.size() < kMaxFilterPorts; p += 3) many.push_back(p);
  const auto big = build_port_filter(many);
  CHECK(big.size() + NLA_HDRLEN <= 65535);
  CHECK(audit_port_filter(big));
  CHECK(run_port_filter(big, 1000, 0));
  CHECK(run_port_filter(big, 5, many.back()));
  CHECK_FALSE(run_port_filter(big, 1001, 1002));
  many.push_back(60000);
  CHECK_THROWS_AS(build_port_filter(many), std::length_error);
  // The audit catches a broken jump.
  auto broken = build_port_filter({3000, 2525});
  broken[2] = 6;  // first op's "no": not a multiple of 4
  CHECK_FALSE(audit_port_filter(broken));
}

TEST_CASE("source range bytecode: the ephemeral range as ss compiles it, passes the audit",
          "[net][bytecode]") {
  CHECK(build_source_range_filter(61000, 32768).empty());
  const auto bc = build_source_range_filter(32768, 60999);
  // {code, yes, no (u16, host order)} per inet_diag_bc_op (linux/inet_diag.h); the port of a
  // comparison sits in the "no" of the op after it. S_GE = 2, S_LE = 3.
  //   S_GE yes 8 no 20 (4 past the end: reject) | port 32768 = 0x8000
  //   S_LE yes 8 no 12 (4 past the end: reject) | port 60999 = 0xee47
  const std::vector<std::uint8_t> le = {2, 8, 20, 0, 0, 0, 0x00, 0x80,
                                        3, 8, 12, 0, 0, 0, 0x47, 0xee};
  if constexpr (std::endian::native == std::endian::little) CHECK(bc == le);
  CHECK(bc.size() == 16);
  CHECK(audit_port_filter(bc));
  for (std::uint32_t sp : {0u, 1u, 32767u, 32768u, 40000u, 60999u, 61000u, 65535u}) {
    for (std::uint32_t dp : {0u, 80u, 32768u}) {
      CHECK(run_port_filter(bc, static_cast<std::uint16_t>(sp), static_cast<std::uint16_t>(dp)) ==
            (sp >= 32768 && sp <= 60999));
    }
  }
  // One port wide, and the whole port space.
  CHECK(audit_port_filter(build_source_range_filter(5, 5)));
  CHECK(run_port_filter(build_source_range_filter(5, 5), 5, 1));
  CHECK_FALSE(run_port_filter(build_source_range_filter(5, 5), 6, 5));
  CHECK(run_port_filter(build_source_range_filter(0, 65535), 65535, 0));
}

// ---------------------------------------------------------------- tally

TEST_CASE("tally: per-port sides, the fullest listener, ephemeral usage per destination",
          "[net][tally]") {
  TcpTally t;
  t.begin({3000, 2525, 3000, 0}, 32768, 60999);
  REQUIRE(t.ports().size() == 2);
  CHECK(t.ports()[0].port == 2525);
  CHECK(t.ephemeral_ports() == 28232);

  TcpSocket l1 = sock(kTcpListen, 3000, 0);
  l1.rqueue = 2;
  l1.wqueue = 128;
  TcpSocket l2 = sock(kTcpListen, 3000, 0);  // SO_REUSEPORT sibling, fuller
  l2.rqueue = 9;
  l2.wqueue = 8;
  t.add(l1);
  t.add(l2);
  t.add(l1);
  for (int i = 0; i < 10; ++i) t.add(sock(kTcpEstablished, 40000 + i, 3000));  // clients
  for (int i = 0; i < 10; ++i) t.add(sock(kTcpEstablished, 3000, 40000 + i));  // servers
  for (int i = 0; i < 4; ++i) t.add(sock(kTcpTimeWait, 50000 + i, 2525, "10.0.0.2"));
  t.add(sock(kTcpEstablished, 1000, 3000, "10.0.0.9"));  // not an ephemeral local port

  const TcpPortStats& p3000 = t.ports()[1];
  CHECK(p3000.local[kTcpListen] == 3);
  CHECK(p3000.local[kTcpEstablished] == 10);
  CHECK(p3000.remote[kTcpEstablished] == 11);
  CHECK(p3000.queue_length == 9);
  CHECK(p3000.queue_max == 8);
  CHECK(p3000.queue_max_known);
  CHECK(t.ports()[0].remote[kTcpTimeWait] == 4);
  CHECK_FALSE(t.ports()[0].listening);
  // 127.0.0.1:3000 has 10 ephemeral local ports in use (the servers' local port 3000 is not
  // in the range): 10 / 28232.
  CHECK(t.ephemeral_max() == 10);
  CHECK(t.ephemeral_ratio() == Approx(10.0 / 28232));

  // IPv4-mapped IPv6 peers share the IPv4 destination's count.
  for (int i = 0; i < 11; ++i) {
    TcpSocket s = sock(kTcpEstablished, 41000 + i, 3000);
    s.family = AF_INET6;
    const std::uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    std::memcpy(s.daddr.data(), mapped, 16);
    t.add(s);
  }
  CHECK(t.ephemeral_max() == 21);

  // TIME_WAIT sockets count toward the ephemeral usage only through merge_timewait(), added
  // destination by destination to the other states' counts.
  for (int i = 0; i < 30; ++i) t.add(sock(kTcpTimeWait, 45000 + i, 80, "10.0.0.3"));
  CHECK(t.ephemeral_max() == 21);
  EphemeralUse tw;
  tw.reset(32768, 60999);
  for (int i = 0; i < 15; ++i) tw.add(sock(kTcpTimeWait, 50000 + i, 3000));  // + 21 = 36
  for (int i = 0; i < 30; ++i) tw.add(sock(kTcpTimeWait, 45000 + i, 80, "10.0.0.3"));
  tw.add(sock(kTcpTimeWait, 1024, 3000));  // not an ephemeral local port
  CHECK(tw.max() == 30);
  t.merge_timewait(tw);
  CHECK(t.ephemeral_max() == 36);
  tw.reset(32768, 60999);  // fresher counts replace the earlier ones
  for (int i = 0; i < 40; ++i) tw.add(sock(kTcpTimeWait, 45000 + i, 80, "10.0.0.3"));
  t.merge_timewait(tw);
  CHECK(t.ephemeral_max() == 40);

  // begin() starts over and forgets the old ports.
  t.begin({80}, 1, 0);
  CHECK(t.ports().size() == 1);
  CHECK_FALSE(t.watched(3000));
  CHECK(t.ephemeral_ports() == 0);
  CHECK(t.ephemeral_ratio() == 0);
}

// ---------------------------------------------------------------- small host files

TEST_CASE("sockstat fixture and literals", "[net][sockstat]") {
  const SockstatTcp s = parse_sockstat(slurp(kProc + "/net/sockstat"));
  CHECK(s.inuse == 3);
  CHECK(s.orphan == 0);
  CHECK(s.tw == 13);
  CHECK(s.alloc == 3);
  CHECK(s.mem_pages == 14);
  CHECK(parse_sockstat6_tcp_inuse(slurp(kProc + "/net/sockstat6")) == 0u);
  CHECK(parse_sockstat6_tcp_inuse("UDP6: inuse 1\n") == std::nullopt);
  CHECK_THROWS(parse_sockstat("sockets: used 1\nUDP: inuse 0 mem 0\n"));
  CHECK_THROWS(parse_sockstat("TCP: inuse 3 orphan 0 tw x alloc 3 mem 1\n"));
  CHECK_THROWS(parse_sockstat("TCP: inuse 3 orphan 0 alloc 3 mem 1\n"));
}

TEST_CASE("netstat and snmp fixtures", "[net][netstat]") {
  auto ext = parse_netstat(slurp(kProc + "/net/netstat"));
  auto snmp = parse_netstat(slurp(kProc + "/net/snmp"));
  CHECK(ext.at("TcpExt.TW") == 25);
  CHECK(ext.at("TcpExt.ListenOverflows") == 0);
  CHECK(ext.at("IpExt.InOctets") == 110125188);
  CHECK(snmp.at("Tcp.ActiveOpens") == 44);
  CHECK(snmp.at("Tcp.PassiveOpens") == 13);
  CHECK(snmp.at("Tcp.OutRsts") == 35);
  CHECK(snmp.at("Tcp.AttemptFails") == 3);
  CHECK(snmp.at("Tcp.MaxConn") == -1);
  CHECK_THROWS(parse_netstat("TcpExt: A B\n"));
  CHECK_THROWS(parse_netstat("TcpExt: A B\nTcpExt: 1\n"));
  CHECK_THROWS(parse_netstat("TcpExt: A B\nIpExt: 1 2\n"));
  CHECK_THROWS(parse_netstat("TcpExt: A\nTcpExt: 1x\n"));
}

TEST_CASE("net/dev fixture", "[net][netdev]") {
  auto devs = parse_netdev(slurp(kProc + "/net/dev"));
  REQUIRE(devs.size() == 4);
  CHECK(devs[0].device == "lo");
  CHECK(devs[0].rx_bytes == 24059);
  CHECK(devs[0].tx_packets == 146);
  CHECK(devs[3].device == "eth0");
  CHECK(devs[3].rx_bytes == 110161401);
  CHECK(devs[3].tx_bytes == 376696);
  CHECK(devs[3].tx_packets == 2851);
  // A long name touching the colon, and a malformed line.
  auto d = parse_netdev("verylongname0:1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].device == "verylongname0");
  CHECK(d[0].rx_errors == 3);
  CHECK(d[0].rx_drop == 4);
  CHECK(d[0].tx_bytes == 9);
  CHECK(d[0].tx_errors == 11);
  CHECK(d[0].tx_drop == 12);
  CHECK_THROWS(parse_netdev("eth0: 1 2 3\n"));
}

TEST_CASE("sysctl values and the port range", "[net][sysctl]") {
  CHECK(parse_sysctl_number("4096\n") == 4096);
  CHECK(parse_sysctl_number("9223372036854775807\n") == Approx(9.223372036854775807e18));
  CHECK_THROWS(parse_sysctl_number("1 2\n"));
  CHECK_THROWS(parse_sysctl_number("\n"));
  CHECK(parse_port_range(slurp(kProc + "/sys/net/ipv4/ip_local_port_range")) ==
        std::pair<std::uint32_t, std::uint32_t>{32768, 60999});
  CHECK_THROWS(parse_port_range("1024 70000\n"));
  CHECK_THROWS(parse_port_range("1024\n"));
}

// ---------------------------------------------------------------- collectors on fixture trees

TEST_CASE("only the kernel's own /proc counts as live procfs (netlink may stand in)",
          "[net][collector]") {
  CHECK(FsRoot("/proc").is_live_procfs());
  CHECK(FsRoot("/proc/").is_live_procfs());
  CHECK_FALSE(FsRoot(kProc).is_live_procfs());
  CHECK_FALSE(FsRoot("/host/proc").is_live_procfs());
}

TEST_CASE("collectors on the fixture tree", "[net][collector]") {
  Options opt;
  Config cfg;
  FsRoot proc(kProc), sys("/nonexistent-sys");
  CollectorEnv env{opt, cfg, proc, sys};

  SECTION("tcp: a procfs root other than /proc is read through /proc/net/tcp") {
    cfg.tcp.ports = {23600, 9};
    auto c = make_tcp_collector(env);
    auto f = run(*c, proc);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "time_wait"}}) == 13);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "listen"}}) == 3);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "established"}}) == 0);
    CHECK(series(f, "loadwatch_tcp_connections") == 11);
    // 23600 (0x5C30): a listener, 5 client ends in TIME_WAIT toward it, 3 server ends.
    CHECK(value(f, "loadwatch_tcp_port_connections",
                {{"port", "23600"}, {"side", "remote"}, {"state", "time_wait"}}) == 5);
    CHECK(value(f, "loadwatch_tcp_port_connections",
                {{"port", "23600"}, {"side", "local"}, {"state", "time_wait"}}) == 3);
    CHECK(value(f, "loadwatch_tcp_port_connections",
                {{"port", "23600"}, {"side", "local"}, {"state", "listen"}}) == 1);
    CHECK(value(f, "loadwatch_tcp_port_connections",
                {{"port", "9"}, {"side", "local"}, {"state", "listen"}}) == 0);
    CHECK(series(f, "loadwatch_tcp_port_connections") == 2 * 2 * 11);
    CHECK(value(f, "loadwatch_tcp_listen_queue_length", {{"port", "23600"}}) == 0);
    CHECK(series(f, "loadwatch_tcp_listen_queue_max") == 0);  // /proc has no such column
    CHECK(value(f, "loadwatch_tcp_ephemeral_ports") == 28232);
    // Ephemeral: the 5 TIME_WAIT client ends toward 127.0.0.1:23600.
    CHECK(value(f, "loadwatch_tcp_ephemeral_port_usage_ratio") == Approx(5.0 / 28232));
  }
  SECTION("tcp: without watched ports, TIME_WAIT still counts toward ephemeral usage") {
    auto c = make_tcp_collector(env);
    auto f = run(*c, proc);
    CHECK(value(f, "loadwatch_tcp_connections", {{"state", "time_wait"}}) == 13);
    CHECK(series(f, "loadwatch_tcp_port_connections") == 0);
    // The same 5 client ends toward 127.0.0.1:23600, watched or not.
    CHECK(value(f, "loadwatch_tcp_ephemeral_port_usage_ratio") == Approx(5.0 / 28232));
  }
  SECTION("sockstat") {
    auto f = run(*make_sockstat_collector(env), proc);
    CHECK(value(f, "loadwatch_sockstat_tcp_inuse") == 3);
    CHECK(value(f, "loadwatch_sockstat_tcp_time_wait") == 13);
    CHECK(value(f, "loadwatch_sockstat_tcp_alloc") == 3);
    CHECK(value(f, "loadwatch_sockstat_tcp_orphan") == 0);
    CHECK(value(f, "loadwatch_sockstat_tcp_memory_bytes") == 14.0 * ::sysconf(_SC_PAGESIZE));
  }
  SECTION("netstat") {
    auto f = run(*make_netstat_collector(env), proc);
    CHECK(value(f, "loadwatch_tcp_active_opens_total") == 44);
    CHECK(value(f, "loadwatch_tcp_passive_opens_total") == 13);
    CHECK(value(f, "loadwatch_tcp_resets_sent_total") == 35);
    CHECK(value(f, "loadwatch_tcp_attempt_fails_total") == 3);
    CHECK(value(f, "loadwatch_tcp_listen_overflows_total") == 0);
    CHECK(value(f, "loadwatch_tcp_syncookies_sent_total") == 0);
    CHECK(f.size() == 10);
  }
  SECTION("sysctl") {
    auto f = run(*make_sysctl_collector(env), proc);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "net.core.somaxconn"}}) == 4096);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "net.ipv4.tcp_tw_reuse"}}) == 2);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "net.ipv4.tcp_max_syn_backlog"}}) == 2048);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "net.ipv4.tcp_max_tw_buckets"}}) == 131072);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "net.ipv4.tcp_fin_timeout"}}) == 60);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "fs.file-max"}}) == 2466160);
    CHECK(value(f, "loadwatch_sysctl", {{"name", "fs.nr_open"}}) == 1048576);
  }
  SECTION("netdev") {
    auto f = run(*make_netdev_collector(env), proc);
    CHECK(value(f, "loadwatch_network_receive_bytes_total", {{"device", "eth0"}}) == 110161401);
    CHECK(value(f, "loadwatch_network_transmit_packets_total", {{"device", "lo"}}) == 146);
    CHECK(series(f, "loadwatch_network_receive_drop_total") == 4);
  }
  SECTION("conntrack: entries and limit from the captured files") {
    auto f = run(*make_conntrack_collector(env), proc);
    CHECK(value(f, "loadwatch_nf_conntrack_entries") == 0);  // module loaded, no rules
    CHECK(value(f, "loadwatch_nf_conntrack_entries_limit") == 262144);
  }
  SECTION("conntrack: no files (nf_conntrack not loaded), no data, no error") {
    FsRoot bare("/nonexistent-proc");
    auto f = run(*make_conntrack_collector(env), bare);
    CHECK(f.empty());
  }
}
