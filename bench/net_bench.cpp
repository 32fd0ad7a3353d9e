// net_bench — CPU cost of the network collectors per sample, and a fixture recorder.
//
//   net_bench sample [--ports P1,P2,..] [--samples K] [--force-procfs] [--collector NAME]
//                    [--target NAME=PID ...] [--walk-budget MS]
//       Builds the collector (default "tcp") as the daemon does (--walk-budget: the tcp
//       collector with another deferral budget, 0 = walk every sample), runs one warm-up and
//       K timed samples against the live /proc and kernel, and prints one JSON line: CPU
//       (user + system, CLOCK_THREAD_CPUTIME_ID) per sample in ms (mean, median, max), wall
//       ms, and the collector's TIME_WAIT figures of the last sample. Driven by
//       bench/net_bench.py, which builds the 60,000 TIME_WAIT fixture and runs the peers.
//
//   net_bench dump MASK FAMILY K [PORT... | --sport LO-HI]
//       Kernel + parse cost of one sock_diag dump (see dump_cost()).
//
//   net_bench owners FDS K
//       CPU per sample of the socket owner cache for this process holding FDS fds (a few
//       loopback TCP pairs, the rest /dev/null), unchanged between samples, in three ways:
//       the kernel's fd count (Linux >= 6.2), none (older kernels, as before), and none but
//       the targets collector's count of the sample (older kernels, now). One JSON line.
//
//   net_bench capture DIR PORT...
//       Records, in one moment, the raw netlink sock_diag replies of an all-states TCP dump
//       filtered (INET_DIAG_REQ_BYTECODE) to sockets with a local or remote port among PORTs:
//       per family (DIR/sock_diag_inet.bin, DIR/sock_diag_inet6.bin) and both families in one
//       TCPDIAG_GETSOCK dump (DIR/sock_diag_compat.bin); and the lines of /proc/net/tcp and
//       tcp6 on those ports (DIR/tcp, DIR/tcp6, header kept). It retries (at most 10 times)
//       until all readers report the same sockets, so the fixtures agree with each other.
//       Used by tests/fixtures/net/capture-net.py.

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/cpu_clock.h"
#include "collectors/collector.h"
#include "collectors/tcp.h"
#include "process/socket_owners.h"
#include "procfs/proc_net_tcp.h"
#include "procfs/sock_diag.h"

using namespace loadwatch;

namespace {

double thread_cpu_ms() { return 1e3 * loadwatch::bench::thread_cpu_seconds(); }

double wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double find(const std::vector<prometheus::MetricFamily>& fams, const std::string& name,
            const std::vector<std::pair<std::string, std::string>>& labels) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      bool ok = true;
      for (const auto& [k, v] : labels) {
        bool hit = false;
        for (const auto& l : m.label) hit |= l.name == k && l.value == v;
        ok &= hit;
      }
      if (ok) return f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

int sample(int argc, char** argv) {
  Options opt;
  Config cfg;
  std::string collector = "tcp";
  int samples = 20;
  std::vector<TargetState> targets;
  double walk_budget = -1;  // < 0: the collector's default
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ports" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string p; std::getline(ss, p, ',');) {
        if (!p.empty()) cfg.tcp.ports.push_back(static_cast<std::uint16_t>(std::stoi(p)));
      }
    } else if (a == "--samples" && i + 1 < argc) {
      samples = std::max(1, std::min(10000, std::atoi(argv[++i])));
    } else if (a == "--walk-budget" && i + 1 < argc) {
      walk_budget = std::atof(argv[++i]);
    } else if (a == "--force-procfs") {
      opt.tcp_force_procfs = true;
    } else if (a == "--target" && i + 1 < argc) {  // NAME=PID
      std::string t = argv[++i];
      auto eq = t.find('=');
      if (eq == std::string::npos) return 2;
      TargetState ts;
      ts.name = t.substr(0, eq);
      ts.pids = {static_cast<pid_t>(std::stoi(t.substr(eq + 1)))};
      ts.up = true;
      targets.push_back(ts);
    } else if (a == "--collector" && i + 1 < argc) {
      collector = argv[++i];
    } else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  FsRoot proc("/proc"), sys("/sys");
  CollectorEnv env{opt, cfg, proc, sys};
  std::unique_ptr<Collector> c;
  for (const auto& spec : collector_table()) {
    if (collector == spec.name) c = spec.make(env);
  }
  if (collector == "tcp" && walk_budget >= 0) c = make_tcp_collector_with_budget(env, walk_budget);
  if (!c) {
    std::cerr << "no collector " << collector << "\n";
    return 2;
  }
  std::vector<double> cpu, wall;
  std::vector<prometheus::MetricFamily> last;
  for (int i = 0; i <= samples; ++i) {
    SampleContext ctx{proc, sys, 0, targets};
    MetricSink sink;
    const double c0 = thread_cpu_ms(), w0 = wall_ms();
    c->collect(ctx, sink);
    const double c1 = thread_cpu_ms(), w1 = wall_ms();
    if (i > 0) {  // sample 0 warms up (opens the socket, sizes the buffers)
      cpu.push_back(c1 - c0);
      wall.push_back(w1 - w0);
    }
    last = sink.take();
  }
  auto stats = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    return std::make_tuple(sum / v.size(), v[v.size() / 2], v.back());
  };
  auto [cmean, cmed, cmax] = stats(cpu);
  auto [wmean, wmed, wmax] = stats(wall);
  std::printf(
      "{\"collector\":\"%s\",\"samples\":%d,\"ports\":%zu,\"force_procfs\":%s,"
      "\"cpu_ms_mean\":%.3f,\"cpu_ms_median\":%.3f,\"cpu_ms_max\":%.3f,"
      "\"wall_ms_mean\":%.3f,\"wall_ms_median\":%.3f,\"wall_ms_max\":%.3f,"
      "\"time_wait\":%.0f,\"ephemeral_max\":%.0f",
      collector.c_str(), samples, cfg.tcp.ports.size(), opt.tcp_force_procfs ? "true" : "false",
      cmean, cmed, cmax, wmean, wmed, wmax,
      find(last, "loadwatch_tcp_connections", {{"state", "time_wait"}}),
      find(last, "loadwatch_tcp_ephemeral_port_usage_ratio", {}) *
          find(last, "loadwatch_tcp_ephemeral_ports", {}));
  for (auto p : cfg.tcp.ports) {
    std::printf(
        ",\"tw_port_%u\":%.0f", p,
        find(last, "loadwatch_tcp_port_connections",
             {{"port", std::to_string(p)}, {"side", "local"}, {"state", "time_wait"}}) +
            find(last, "loadwatch_tcp_port_connections",
                 {{"port", std::to_string(p)}, {"side", "remote"}, {"state", "time_wait"}}));
  }
  for (const auto& t : targets) {
    std::printf(",\"target_%s_established\":%.0f", t.name.c_str(),
                find(last, "loadwatch_process_tcp_connections",
                     {{"target", t.name}, {"state", "established"}}));
  }
  std::printf("}\n");
  return 0;
}

/// Collects (family, state, minisock, sport, dport, inode, rqueue) of every socket, sorted.
class Keys final : public TcpSocketVisitor {
 public:
  using Key = std::tuple<int, int, int, int, int, std::uint64_t, std::uint32_t>;
  std::vector<Key> keys;
  void on_socket(const TcpSocket& s) override {
    keys.emplace_back(s.family, s.state, s.timewait_minisock, s.sport, s.dport, s.inode,
                      s.state == kTcpListen ? s.rqueue : 0);
  }
};

bool write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(f);
}

/// Keeps the header and the lines of /proc/net/tcp{,6} text whose local or remote port is in
/// `ports`, as the bytecode filter does for the netlink dump.
std::string filter_lines(const std::string& text, std::uint8_t family,
                         const std::vector<std::uint16_t>& ports) {
  std::string out;
  std::size_t pos = 0;
  bool header = true;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos + 1);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (header) {
      out += line;
      header = false;
      continue;
    }
    Keys k;
    parse_proc_net_tcp(line, family, k);
    for (const auto& key : k.keys) {
      const int sport = std::get<3>(key), dport = std::get<4>(key);
      if (std::find(ports.begin(), ports.end(), sport) != ports.end() ||
          std::find(ports.begin(), ports.end(), dport) != ports.end()) {
        out += line;
      }
    }
  }
  return out;
}

int capture(const std::string& dir, const std::vector<std::uint16_t>& ports) {
  int err = 0;
  auto diag = SockDiag::open(err);
  if (!diag) {
    std::cerr << "sock_diag: " << std::strerror(err) << "\n";
    return 1;
  }
  const auto bc = build_port_filter(ports);
  FsRoot proc("/proc");
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::string bin4, bin6, compat, tcp4, tcp6;
    Keys nl, pf, both;
    diag->set_capture(&bin4);
    if ((err = diag->dump(AF_INET, kAllTcpStates, bc, nl)) != 0) break;
    diag->set_capture(&bin6);
    if ((err = diag->dump(AF_INET6, kAllTcpStates, bc, nl)) != 0) break;
    diag->set_capture(&compat);
    if ((err = diag->dump(AF_UNSPEC, kAllTcpStates, bc, both)) != 0) break;
    diag->set_capture(nullptr);
    if (proc.read("net/tcp", tcp4) != 0 || proc.read("net/tcp6", tcp6) != 0) return 1;
    tcp4 = filter_lines(tcp4, AF_INET, ports);
    tcp6 = filter_lines(tcp6, AF_INET6, ports);
    parse_proc_net_tcp(tcp4, AF_INET, pf);
    parse_proc_net_tcp(tcp6, AF_INET6, pf);
    std::sort(nl.keys.begin(), nl.keys.end());
    std::sort(pf.keys.begin(), pf.keys.end());
    std::sort(both.keys.begin(), both.keys.end());
    if (nl.keys != pf.keys || nl.keys != both.keys) {
      std::cerr << "attempt " << attempt << ": netlink and /proc differ, retrying\n";
      continue;
    }
    bool ok = write_file(dir + "/sock_diag_inet.bin", bin4) &&
              write_file(dir + "/sock_diag_inet6.bin", bin6) &&
              write_file(dir + "/sock_diag_compat.bin", compat) && write_file(dir + "/tcp", tcp4) &&
              write_file(dir + "/tcp6", tcp6);
    std::cerr << "captured " << nl.keys.size() << " sockets\n";
    return ok ? 0 : 1;
  }
  if (err != 0) std::cerr << "sock_diag dump: " << std::strerror(err) << "\n";
  return 1;
}

/// Kernel cost of one dump: `net_bench dump MASK FAMILY K [PORT... | --sport LO-HI]` (MASK in
/// hex, FAMILY 0 for the two-family TCPDIAG_GETSOCK dump, 2 or 10; --sport: the source range
/// bytecode of the ephemeral TIME_WAIT dump): thread CPU ms per dump, median of K.
int dump_cost(int argc, char** argv) {
  if (argc < 5) return 2;
  const std::uint32_t mask = static_cast<std::uint32_t>(std::stoul(argv[2], nullptr, 16));
  const int family = std::atoi(argv[3]);
  const int k = std::max(1, std::min(1000, std::atoi(argv[4])));
  std::vector<std::uint16_t> ports;
  std::vector<std::uint8_t> bc;
  if (argc == 7 && std::string(argv[5]) == "--sport") {
    unsigned lo = 0, hi = 0;
    if (std::sscanf(argv[6], "%u-%u", &lo, &hi) != 2 || hi > 65535) return 2;
    bc = build_source_range_filter(static_cast<std::uint16_t>(lo), static_cast<std::uint16_t>(hi));
  } else {
    for (int i = 5; i < argc; ++i)
      ports.push_back(static_cast<std::uint16_t>(std::atoi(argv[i])));
    bc = build_port_filter(ports);
  }
  int err = 0;
  auto diag = SockDiag::open(err);
  if (!diag) return 1;
  struct Count final : TcpSocketVisitor {
    long n = 0;
    void on_socket(const TcpSocket&) override { ++n; }
  } count;
  std::vector<double> cpu;
  for (int i = 0; i <= k; ++i) {
    count.n = 0;
    const double c0 = thread_cpu_ms();
    if (diag->dump(static_cast<std::uint8_t>(family), mask, bc, count) != 0) return 1;
    if (i > 0) cpu.push_back(thread_cpu_ms() - c0);
  }
  std::sort(cpu.begin(), cpu.end());
  std::printf(
      "{\"mask\":\"%x\",\"family\":%d,\"ports\":%zu,\"sockets\":%ld,"
      "\"cpu_ms_median\":%.3f,\"cpu_ms_min\":%.3f}\n",
      mask, family, ports.size(), count.n, cpu[cpu.size() / 2], cpu.front());
  return 0;
}

}  // namespace

/// `net_bench owners FDS K`: see the header.
int owners_cost(int argc, char** argv) {
  if (argc < 4) return 2;
  int fds = std::max(16, std::min(200000, std::atoi(argv[2])));
  const int samples = std::max(1, std::min(10000, std::atoi(argv[3])));
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  // Room above FDS for the listings' own directory fds.
  fds = static_cast<int>(std::min<rlim_t>(static_cast<rlim_t>(fds), rl.rlim_max - 64));
  rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, static_cast<rlim_t>(fds) + 64);
  ::setrlimit(RLIMIT_NOFILE, &rl);
  // 8 loopback TCP pairs and a listener: the sockets the dump holds.
  std::vector<int> held;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listener, 16) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::cerr << "net_bench: no loopback listener\n";
    return 1;
  }
  held.push_back(listener);
  for (int i = 0; i < 8; ++i) {
    int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
    held.push_back(c);
    held.push_back(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  }
  std::vector<std::uint64_t> alive;
  for (int fd : held) {
    struct stat st {};
    if (::fstat(fd, &st) == 0) alive.push_back(st.st_ino);
  }
  std::sort(alive.begin(), alive.end());
  while (static_cast<int>(held.size()) < fds) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    held.push_back(fd);
  }
  auto count_fds = [] {  // as the targets collector counts: a listing (its own fd left out)
    long long n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    if (!d) return -1LL;
    while (const dirent* e = ::readdir(d)) {
      n += e->d_name[0] != '.' && std::atoi(e->d_name) != ::dirfd(d);
    }
    ::closedir(d);
    return n;
  };
  FsRoot proc("/proc");
  const pid_t self = ::getpid();
  auto run = [&](bool fd_dir_size, bool with_count) {
    SocketOwners owners(FdBudget::shared(), fd_dir_size);
    std::vector<double> cpu;
    std::uint64_t listings = 0;
    for (int i = 0; i <= samples + 1; ++i) {  // two warm-ups: the cache, then its own dir fd
      std::vector<std::pair<pid_t, long long>> counts;
      if (with_count) counts.emplace_back(self, count_fds());
      const auto before = owners.stats().listings;
      const double c0 = thread_cpu_ms();
      owners.update(proc, {self}, alive, counts);
      const double c1 = thread_cpu_ms();
      if (i > 1) {
        cpu.push_back(c1 - c0);
        listings += owners.stats().listings - before;
      }
    }
    std::sort(cpu.begin(), cpu.end());
    return std::make_pair(cpu[cpu.size() / 2], listings);
  };
  auto [kernel, kernel_lists] = run(true, false);
  auto [old_way, old_lists] = run(false, false);
  auto [counted, counted_lists] = run(false, true);
  std::printf(
      "{\"fds\":%zu,\"samples\":%d,\"cpu_ms_median_kernel_count\":%.3f,"
      "\"cpu_ms_median_no_count\":%.3f,\"cpu_ms_median_targets_count\":%.3f,"
      "\"listings_kernel_count\":%llu,\"listings_no_count\":%llu,"
      "\"listings_targets_count\":%llu}\n",
      held.size(), samples, kernel, old_way, counted,
      static_cast<unsigned long long>(kernel_lists), static_cast<unsigned long long>(old_lists),
      static_cast<unsigned long long>(counted_lists));
  for (int fd : held) ::close(fd);
  return 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "sample") return sample(argc, argv);
    if (mode == "dump") return dump_cost(argc, argv);
    if (mode == "owners") return owners_cost(argc, argv);
    if (mode == "capture" && argc >= 4) {
      std::vector<std::uint16_t> ports;
      for (int i = 3; i < argc; ++i)
        ports.push_back(static_cast<std::uint16_t>(std::atoi(argv[i])));
      return capture(argv[2], ports);
    }
  } catch (const std::exception& e) {
    std::cerr << "net_bench: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: net_bench sample [--ports P,..] [--samples K] [--force-procfs] "
               "[--collector NAME] [--target NAME=PID] [--walk-budget MS]\n       net_bench "
               "capture DIR PORT...\n       net_bench owners FDS K\n";
  return 2;
}
