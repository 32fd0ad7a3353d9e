// The targets and topcpu collectors against real processes this test forks (loopback only;
// every child is killed by its PID and reaped; every wait is bounded).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectors/collector.h"
#include "collectors/targets.h"
#include "collectors/topcpu.h"
#include "config/config.h"
#include "config/options.h"
#include "metrics/metric_sink.h"
#include "process/cgroup_membership.h"
#include "process/process_registry.h"
#include "process/target_resolver.h"
#include "procfs/fs_root.h"
#include "tests/lib/eventually.h"
#include "tests/lib/read_line.h"
#include "tests/lib/skip.h"

using namespace loadwatch;
using loadwatch::test::eventually;
namespace fs = std::filesystem;

namespace {

// ---- children ---------------------------------------------------------------------------

/// A forked child running `body(write_fd)`; it reports through the pipe and then sleeps
/// until killed. The destructor kills it by PID (SIGKILL) and reaps it.
class Child {
 public:
  template <class Body>
  explicit Child(Body body) {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::close(fds[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);      // never outlive the test
      int null = ::open("/dev/null", O_RDWR);  // nor hold the test's output open
      ::dup2(null, 1);
      ::dup2(null, 2);
      body(fds[1]);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    rd_ = fds[0];
  }
  ~Child() {
    kill();
    ::close(rd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  /// Reads one line the child wrote (bounded: 10 s).
  std::string line() {
    auto out = test::read_line(rd_, std::chrono::seconds(10));
    if (!out) FAIL("child " << pid_ << " did not report in time");
    return *out;
  }

  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int rd_ = -1;
};

void say(int fd, const std::string& s) {
  std::string line = s + "\n";
  if (::write(fd, line.data(), line.size()) < 0) _exit(1);
}

/// Burns `seconds` of this process's own CPU time (not wall time: the machine is shared).
void burn_cpu(double seconds) {
  auto used = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  const double start = used();
  volatile unsigned long x = 0;
  while (used() - start < seconds) {
    for (int i = 0; i < 100000; ++i) x = x + i;
  }
}

// ---- the collector ------------------------------------------------------------------------

struct Harness {
  Options options;
  Config config;
  FsRoot proc{"/proc"};
  FsRoot sys;
  std::unique_ptr<Collector> collector;
  MetricSink sink;
  std::vector<TargetState> states;

  /// `sys_root`: the sysfs root (an empty directory: no cgroup can be listed or read there).
  explicit Harness(std::vector<TargetConfig> targets, const std::string& sys_root = "/sys")
      : sys(sys_root) {
    config.targets = std::move(targets);
    collector = make_targets_collector(CollectorEnv{options, config, proc, sys, nullptr});
  }
  void collect() {
    sink = MetricSink{};
    SampleContext ctx{proc, sys, 0, {}};
    collector->collect(ctx, sink);
    states = ctx.targets;
  }
  /// The value of `name` for target `target` (and label k=v when given), if exported.
  std::optional<double> value(const std::string& name, const std::string& target,
                              const std::string& k = "", const std::string& v = "") const {
    for (const auto& fam : sink.families()) {
      if (fam.name != name) continue;
      for (const auto& m : fam.metric) {
        bool t = false, kv = k.empty();
        for (const auto& l : m.label) {
          if (l.name == "target" && l.value == target) t = true;
          if (!k.empty() && l.name == k && l.value == v) kv = true;
        }
        if (t && kv) {
          return fam.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
        }
      }
    }
    return std::nullopt;
  }
  double get(const std::string& name, const std::string& target, const std::string& k = "",
             const std::string& v = "") const {
    auto x = value(name, target, k, v);
    INFO(name << "{target=" << target << "} missing");
    REQUIRE(x);
    return *x;
  }
  double cpu(const std::string& target) const {
    return get("loadwatch_process_cpu_seconds_total", target, "mode", "user") +
           get("loadwatch_process_cpu_seconds_total", target, "mode", "system");
  }
};

TargetConfig target(const std::string& name, const std::string& selector, bool children = true) {
  return TargetConfig{name, parse_selector(selector), children};
}

std::string status_field(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

std::size_t count_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    ++n;
  return n;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/lw-targets-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream(p.string() + ".tmp") << content;
  fs::rename(p.string() + ".tmp", p);  // atomic, as daemons write pidfiles
}

/// A short unique comm for this test run (15 chars at most).
std::string unique_comm(const char* prefix) {
  return std::string(prefix) + std::to_string(::getpid() % 100000);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST_CASE("500 fds and 64 MiB of touched memory are reported within 1% of /proc", "[real]") {
  constexpr int kFds = 500;
  constexpr std::size_t kBytes = 64u << 20;
  Child c([](int out) {
    for (int i = 0; i < kFds; ++i) {
      if (::open("/dev/null", O_RDONLY) < 0) _exit(2);
    }
    char* mem = static_cast<char*>(std::malloc(kBytes));
    if (!mem) _exit(3);
    std::memset(mem, 0x5a, kBytes);  // touched: resident
    say(out, "ready");
  });
  REQUIRE(c.line() == "ready");
  Harness h({target("big", "pid:" + std::to_string(c.pid()), false)});
  h.collect();

  const double fds = h.get("loadwatch_process_open_fds", "big");
  const double truth_fds = static_cast<double>(count_fds(c.pid()));
  CHECK(truth_fds >= kFds);
  CHECK(fds == Approx(truth_fds).epsilon(0.01));

  const double rss = h.get("loadwatch_process_resident_memory_bytes", "big");
  const double truth_rss = std::stod(status_field(c.pid(), "VmRSS")) * 1024;
  CHECK(rss >= kBytes);
  CHECK(rss == Approx(truth_rss).epsilon(0.01));
  CHECK(h.get("loadwatch_process_resident_memory_peak_bytes", "big") >= rss);
  CHECK(h.get("loadwatch_process_virtual_memory_bytes", "big") >= rss);
  CHECK(h.get("loadwatch_process_threads", "big") == 1);

  // The fd limit and usage of the one member.
  struct rlimit rl {};
  REQUIRE(::prlimit(c.pid(), RLIMIT_NOFILE, nullptr, &rl) == 0);
  CHECK(h.get("loadwatch_process_max_fds", "big") == static_cast<double>(rl.rlim_cur));
  CHECK(h.get("loadwatch_process_fd_usage_ratio", "big") ==
        Approx(fds / static_cast<double>(rl.rlim_cur)));
  CHECK(h.get("loadwatch_target_up", "big") == 1);
  CHECK(h.get("loadwatch_target_processes", "big") == 1);
  const double start = h.get("loadwatch_process_start_time_seconds", "big");
  const double now = static_cast<double>(std::time(nullptr));
  CHECK(start <= now + 1);
  CHECK(start >= now - 60);
  REQUIRE(h.states.size() == 1);
  CHECK(h.states[0].pids == std::vector<pid_t>{c.pid()});
  CHECK(h.states[0].selector == "pid:" + std::to_string(c.pid()));
}

TEST_CASE("a parent with 3 workers: 4 processes; CPU never goes down when one exits", "[real]") {
  Child parent([](int out) {
    std::vector<pid_t> workers;
    for (int i = 0; i < 3; ++i) {
      pid_t w = ::fork();
      if (w == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the parent the test kills
        burn_cpu(0.25);
        for (;;) ::pause();
      }
      workers.push_back(w);
    }
    std::string list;
    for (pid_t w : workers) list += std::to_string(w) + " ";
    say(out, list);
    // Reap workers as they are killed, like a real master process.
    for (;;) {
      if (::waitpid(-1, nullptr, 0) < 0) ::pause();
    }
  });
  std::vector<pid_t> workers;
  {
    std::istringstream in(parent.line());
    pid_t w;
    while (in >> w) workers.push_back(w);
  }
  REQUIRE(workers.size() == 3);
  Harness h({target("app", "pid:" + std::to_string(parent.pid()))});
  // Let the workers burn their CPU (bounded; clock ticks make 0.25 s read as 0.24).
  REQUIRE(eventually(
      [&] {
        h.collect();
        return h.cpu("app") >= 0.6;
      },
      std::chrono::seconds(60)));
  CHECK(h.get("loadwatch_target_processes", "app") == 4);
  CHECK(h.get("loadwatch_process_threads", "app") == 4);
  const double before = h.cpu("app");
  const double minflt_before = h.get("loadwatch_process_minor_page_faults_total", "app");
  const double ctx_before =
      h.get("loadwatch_process_context_switches_total", "app", "ctxswitchtype", "voluntary") +
      h.get("loadwatch_process_context_switches_total", "app", "ctxswitchtype", "nonvoluntary");

  ::kill(workers[0], SIGKILL);  // the parent reaps it
  REQUIRE(eventually([&] { return ::kill(workers[0], 0) != 0; }));
  h.collect();
  CHECK(h.get("loadwatch_target_processes", "app") == 3);
  CHECK(h.cpu("app") >= before);  // without the retired base it would drop by ~0.25 s
  CHECK(h.get("loadwatch_process_minor_page_faults_total", "app") >= minflt_before);
  CHECK(h.get("loadwatch_process_context_switches_total", "app", "ctxswitchtype", "voluntary") +
            h.get("loadwatch_process_context_switches_total", "app", "ctxswitchtype",
                  "nonvoluntary") >=
        ctx_before);
  CHECK(h.get("loadwatch_target_restarts_total", "app") == 0);
  for (pid_t w : workers) ::kill(w, SIGKILL);
}

TEST_CASE("pidfile target: 0 -> 1, killed and restarted, restarted within one interval", "[real]") {
  TempDir dir;
  const fs::path pidfile = dir.path / "svc.pid";
  Harness h({target("svc", "pidfile:" + pidfile.string(), false)});
  auto sleeper = [](int out) { say(out, "up"); };

  h.collect();  // no pidfile yet: down, exported, no error
  CHECK(h.get("loadwatch_target_up", "svc") == 0);
  CHECK(h.get("loadwatch_target_processes", "svc") == 0);

  auto a = std::make_unique<Child>(sleeper);
  a->line();
  write_file(pidfile, std::to_string(a->pid()) + "\n");
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 1);
  CHECK(h.get("loadwatch_target_restarts_total", "svc") == 0);  // a first start

  a->kill();
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 0);

  auto b = std::make_unique<Child>(sleeper);
  b->line();
  write_file(pidfile, std::to_string(b->pid()) + "\n");
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 1);
  CHECK(h.get("loadwatch_target_restarts_total", "svc") == 1);

  // Faster than one interval: killed and replaced between two samples.
  b->kill();
  auto c = std::make_unique<Child>(sleeper);
  c->line();
  write_file(pidfile, std::to_string(c->pid()) + "\n");
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 1);
  CHECK(h.get("loadwatch_target_restarts_total", "svc") == 2);

  // Killed but not yet reaped (a zombie) counts as down.
  ::kill(c->pid(), SIGKILL);
  REQUIRE(
      eventually([&] { return status_field(c->pid(), "State").find('Z') != std::string::npos; }));
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 0);
  c->kill();

  // Garbage in the pidfile: down, no crash.
  write_file(pidfile, "not a pid\n");
  h.collect();
  CHECK(h.get("loadwatch_target_up", "svc") == 0);
  // Counters of the past runs are held.
  CHECK(h.value("loadwatch_process_cpu_seconds_total", "svc", "mode", "user"));
}

TEST_CASE("targets that never existed are exported as down", "[real]") {
  TempDir dir;
  Harness h({target("ghost", "pidfile:" + (dir.path / "none.pid").string()),
             target("nocomm", "comm:lw-no-such-x"), target("noport", "port:1"),
             target("nounit", "unit:lw-no-such-unit.service"), target("nopid", "pid:4194303")});
  for (int i = 0; i < 2; ++i) {
    h.collect();
    for (const char* t : {"ghost", "nocomm", "noport", "nounit", "nopid"}) {
      INFO(t);
      CHECK(h.get("loadwatch_target_up", t) == 0);
      CHECK(h.get("loadwatch_target_processes", t) == 0);
      CHECK(h.get("loadwatch_target_restarts_total", t) == 0);
      CHECK(h.get("loadwatch_process_cpu_seconds_total", t, "mode", "user") == 0);
      CHECK_FALSE(h.value("loadwatch_process_start_time_seconds", t));
    }
  }
  REQUIRE(h.states.size() == 5);
  CHECK_FALSE(h.states[0].up);
  CHECK(h.states[0].pids.empty());
}

namespace {
/// A child listening on loopback (IPv4 or IPv6), reporting its port.
void listen_on(int out, int family) {
  int s = ::socket(family, SOCK_STREAM, 0);
  if (s < 0) _exit(2);
  sockaddr_storage ss{};
  socklen_t len;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  }
  if (::bind(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(s, 16) != 0) _exit(3);
  if (::getsockname(s, reinterpret_cast<sockaddr*>(&ss), &len) != 0) _exit(4);
  const int port = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port)
                                     : ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  say(out, std::to_string(port));
}
}  // namespace

TEST_CASE("port: finds the owner of a listener on 127.0.0.1 and on ::1", "[real]") {
  Child v4([](int out) { listen_on(out, AF_INET); });
  Child v6([](int out) { listen_on(out, AF_INET6); });
  const std::string p4 = v4.line(), p6 = v6.line();
  Harness h({target("mock4", "port:" + p4, false), target("mock6", "port:" + p6, false)});
  h.collect();
  REQUIRE(h.states.size() == 2);
  CHECK(h.states[0].pids == std::vector<pid_t>{v4.pid()});
  CHECK(h.states[1].pids == std::vector<pid_t>{v6.pid()});
  CHECK(h.get("loadwatch_target_up", "mock4") == 1);
  CHECK(h.get("loadwatch_target_up", "mock6") == 1);
  h.collect();  // verified, still the same owner
  CHECK(h.states[0].pids == std::vector<pid_t>{v4.pid()});

  // The owner is replaced by another process listening on the same port.
  const int port = std::stoi(p4);
  v4.kill();
  h.collect();
  CHECK(h.get("loadwatch_target_up", "mock4") == 0);
  Child again([port](int out) {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 4) != 0) {
      say(out, "busy");
      return;
    }
    say(out, "ok");
  });
  if (again.line() == "ok") {
    h.collect();
    CHECK(h.states[0].pids == std::vector<pid_t>{again.pid()});
    CHECK(h.get("loadwatch_target_restarts_total", "mock4") == 1);
  }
}

TEST_CASE("comm with children: descendants join the group", "[real]") {
  const std::string comm = unique_comm("lwcomm");
  Child parent([comm](int out) {
    ::prctl(PR_SET_NAME, comm.c_str());
    std::string kids;
    for (int i = 0; i < 2; ++i) {
      pid_t k = ::fork();
      if (k == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::prctl(PR_SET_NAME, "lwkid");  // children do not match comm themselves
        if (i == 0 && ::fork() == 0) {  // and a grandchild
          ::prctl(PR_SET_PDEATHSIG, SIGKILL);
          ::prctl(PR_SET_NAME, "lwgrandkid");
          for (;;) ::pause();
        }
        for (;;) ::pause();
      }
      kids += std::to_string(k) + " ";
      // Until its prctl() the kid still has the parent's comm and would match by itself:
      // the test looks only once it is renamed.
      for (int t = 0; t < 500; ++t) {
        std::ifstream f("/proc/" + std::to_string(k) + "/comm");
        std::string c;
        if (std::getline(f, c) && c == "lwkid") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    say(out, kids);
  });
  parent.line();
  Harness h({target("withkids", "comm:" + comm), target("alone", "comm:" + comm, false)});
  REQUIRE(eventually([&] {
    h.collect();
    return h.get("loadwatch_target_processes", "withkids") == 4;
  }));
  CHECK(h.get("loadwatch_target_processes", "alone") == 1);
  REQUIRE(h.states.size() == 2);
  CHECK(h.states[1].pids == std::vector<pid_t>{parent.pid()});
  CHECK(h.states[0].pids.front() == parent.pid());
}

TEST_CASE("cmdline and exe select real processes; an exec() is noticed", "[real]") {
  const std::string marker = unique_comm("lwmark");
  // sh runs "sleep 3" as a child, then exec()s sleep: same PID and start time, another
  // command line.
  Child c([marker](int out) {
    say(out, "go");
    ::execl("/bin/sh", "sh", "-c", "sleep 3; exec sleep 1000", marker.c_str(),
            static_cast<char*>(nullptr));
    _exit(5);
  });
  c.line();
  Harness h({target("bycmd", "cmdline:sleep 1000 " + marker + "$", false),
             target("byexe", "exe:sleep", false)});
  // sh's child for "sleep 3" carries sh's command line from its fork until its exec, so for
  // that moment it matches too: wait until only sh does.
  REQUIRE(eventually(
      [&] {
        h.collect();
        return h.get("loadwatch_target_up", "bycmd") == 1 &&
               h.states[0].pids == std::vector<pid_t>{c.pid()};
      },
      std::chrono::seconds(3)));
  REQUIRE(eventually(
      [&] {
        std::ifstream comm("/proc/" + std::to_string(c.pid()) + "/comm");
        std::string name;
        comm >> name;
        return name == "sleep";
      },
      std::chrono::seconds(20)));
  h.collect();
  CHECK(h.get("loadwatch_target_up", "bycmd") == 0);
  CHECK(::kill(c.pid(), 0) == 0);  // still the same, living process
  const auto& sleepers = h.states[1].pids;
  CHECK(std::find(sleepers.begin(), sleepers.end(), c.pid()) != sleepers.end());
}

TEST_CASE("unit: a real cgroup (v2 unified or v1 name=systemd)", "[real][may-skip]") {
  // Made by this test, removed at the end; skipped where cgroups cannot be created.
  const std::string unit = "lwtest-" + std::to_string(::getpid()) + ".service";
  fs::path base;
  for (const char* h : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup", "/sys/fs/cgroup/systemd"}) {
    if (fs::exists(fs::path(h) / "cgroup.procs") &&
        ::mkdir((fs::path(h) / ("lwtest-" + std::to_string(::getpid()) + ".slice")).c_str(),
                0755) == 0) {
      base = fs::path(h) / ("lwtest-" + std::to_string(::getpid()) + ".slice");
      break;
    }
  }
  if (base.empty()) {
    LWTEST_SKIP("cannot create a cgroup here; unit: checked on fixtures only");
  }
  const fs::path dir = base / unit;
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  {
    Child c([](int out) { say(out, "in"); });
    c.line();
    std::ofstream(dir / "cgroup.procs") << c.pid() << "\n";
    Harness h({target("svc", "unit:" + unit, false)});
    h.collect();
    CHECK(h.get("loadwatch_target_up", "svc") == 1);
    CHECK(h.states[0].pids == std::vector<pid_t>{c.pid()});
  }  // killed and reaped: the cgroup is empty again
  eventually([&] { return ::rmdir(dir.c_str()) == 0; });
  ::rmdir(base.c_str());
  CHECK_FALSE(fs::exists(dir));
}

/// A cgroup with a CPU quota of `cores`, made for the test and removed after it: v2 where the
/// root hands the cpu controller to its children, else v1's cpu hierarchy. Empty `path` when
/// neither can be made here.
struct QuotaCgroup {
  fs::path path;
  QuotaCgroup(const std::string& name, double cores) {
    const std::string leaf = name + "-" + std::to_string(::getpid());
    const long quota = std::lround(cores * 100000);
    std::ifstream subtree("/sys/fs/cgroup/cgroup.subtree_control");
    std::string controller;
    while (subtree >> controller) {
      if (controller != "cpu") continue;
      if (make("/sys/fs/cgroup/" + leaf, {{"cpu.max", std::to_string(quota) + " 100000"}})) return;
    }
    for (const char* v1 : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      if (!fs::exists(fs::path(v1) / "cpu.cfs_quota_us")) continue;
      if (make(fs::path(v1) / leaf,
               {{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", std::to_string(quota)}})) {
        return;
      }
    }
  }
  ~QuotaCgroup() {
    if (!path.empty()) eventually([&] { return ::rmdir(path.c_str()) == 0; });
  }
  bool add(pid_t pid) const {
    std::ofstream(path / "cgroup.procs") << pid << "\n";
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string all((std::istreambuf_iterator<char>(in)), {});
    return all.find(path.filename().string()) != std::string::npos;
  }

 private:
  bool make(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files) {
    if (::mkdir(dir.c_str(), 0755) != 0) return false;
    for (const auto& [file, text] : files) {
      std::ofstream out(dir / file);
      out << text << "\n";
      out.flush();
      if (!out) {
        ::rmdir(dir.c_str());
        return false;
      }
    }
    path = dir;
    return true;
  }
};

TEST_CASE("a target restarted under another CPU quota reports it at the next sample",
          "[real][may-skip]") {
  // Two real cgroups: 0.2 and 0.5 of a core. The target runs under the first for a few
  // samples, is restarted (a new PID in its pidfile) under the second, and the very next
  // sample must give the new limit: the limit is re-read when the first member changes, not
  // after kCpuLimitSamples (15) samples. The truth is the quota the test wrote.
  QuotaCgroup slow("lwtest-quota-a", 0.2), fast("lwtest-quota-b", 0.5);
  if (slow.path.empty() || fast.path.empty()) {
    LWTEST_SKIP("cannot make a cgroup with a CPU quota here (not root, or no cpu controller)");
  }
  TempDir dir;
  const fs::path pidfile = dir.path / "svc.pid";
  Harness h({target("svc", "pidfile:" + pidfile.string(), false)});
  auto sleeper = [](int out) { say(out, "up"); };
  {
    Child a(sleeper);
    a.line();
    REQUIRE(slow.add(a.pid()));
    write_file(pidfile, std::to_string(a.pid()) + "\n");
    for (int i = 0; i < 3; ++i) {
      h.collect();
      CHECK(h.get("loadwatch_process_cpu_limit_cores", "svc") == Approx(0.2));
    }
  }  // killed and reaped
  Child b(sleeper);
  b.line();
  REQUIRE(fast.add(b.pid()));
  write_file(pidfile, std::to_string(b.pid()) + "\n");
  h.collect();
  CHECK(h.get("loadwatch_target_restarts_total", "svc") == 1);
  CHECK(h.get("loadwatch_process_cpu_limit_cores", "svc") == Approx(0.5));
  // Moved back to the slow cgroup while it sleeps: its cgroup file is read through a kept fd,
  // which must give the new text within the refresh bound (15 samples).
  REQUIRE(slow.add(b.pid()));
  bool moved = false;
  for (int i = 0; i < 16 && !moved; ++i) {
    h.collect();
    moved = h.get("loadwatch_process_cpu_limit_cores", "svc") == Approx(0.2);
  }
  CHECK(moved);
  b.kill();
}

/// The /proc/PID/cgroup text of `pid` (the ground truth), "" when unreadable.
std::string cgroup_text(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// The cgroup text the targets collector handed on for `pid` this sample, if it refreshed it.
std::optional<std::string> handed_on(const TargetState& t, pid_t pid) {
  for (const auto& [p, text] : t.cgroups) {
    if (p == pid) return text;
  }
  return std::nullopt;
}

TEST_CASE("a member moved to another cgroup is seen within 15 samples, listed or read",
          "[real][may-skip]") {
  // Three sleepers under a quota of 0.2 cores; one moves to 0.5 while all sleep. The two that
  // stay are confirmed by one listing of their cgroup; the moved one is not listed there and
  // is read on its own. Within 15 samples the limit is 0.5 (the largest member's) and every
  // text handed on is /proc's. Then the same without any cgroup listing (a sysfs root with
  // none: every member read on its own). The truth: the quotas written, /proc/PID/cgroup.
  QuotaCgroup slow("lwtest-move-a", 0.2), fast("lwtest-move-b", 0.5);
  if (slow.path.empty() || fast.path.empty()) {
    LWTEST_SKIP("cannot make a cgroup with a CPU quota here (not root, or no cpu controller)");
  }
  const std::string comm = "lwmove" + std::to_string(::getpid() % 100000);
  auto sleeper = [&comm](int out) {
    ::prctl(PR_SET_NAME, comm.c_str());
    say(out, "up");
  };
  Child a(sleeper), b(sleeper), c(sleeper);
  for (Child* k : {&a, &b, &c}) {
    k->line();
    REQUIRE(slow.add(k->pid()));
  }

  // The listing itself, against /proc. Asked as if for many members: a listing much longer
  // than the members asking is not read (here the v2 line of a hybrid host names the root).
  constexpr std::size_t kMany = 100000;
  CgroupMembership listing(FsRoot("/proc"), FsRoot("/sys"));
  const std::string before = cgroup_text(a.pid());
  if (!listing.checkable(before)) {
    LWTEST_SKIP("this host's cgroup mounts do not list the test's own thread: no listing");
  }
  listing.begin_sample();
  for (Child* k : {&a, &b, &c}) CHECK(listing.listed(cgroup_text(k->pid()), k->pid(), kMany));
  REQUIRE(fast.add(c.pid()));
  REQUIRE(cgroup_text(c.pid()) != before);
  listing.begin_sample();
  CHECK_FALSE(listing.listed(before, c.pid(), kMany));
  CHECK(listing.listed(before, a.pid(), kMany));
  CHECK(listing.listed(before, b.pid(), kMany));
  REQUIRE(slow.add(c.pid()));

  TempDir no_cgroups;
  for (const std::string& sys : {std::string("/sys"), no_cgroups.path.string()}) {
    CAPTURE(sys);
    REQUIRE(slow.add(c.pid()));
    Harness h({target("svc", "comm:" + comm, false)}, sys);
    h.collect();
    REQUIRE(h.states.at(0).pids.size() == 3);
    if (sys == "/sys") CHECK(h.get("loadwatch_process_cpu_limit_cores", "svc") == Approx(0.2));
    REQUIRE(fast.add(c.pid()));
    const std::string moved = cgroup_text(c.pid());
    bool seen = false;
    for (int i = 0; i < 15 && !seen; ++i) {
      h.collect();
      for (Child* k : {&a, &b, &c}) {
        if (auto text = handed_on(h.states.at(0), k->pid())) CHECK(*text == cgroup_text(k->pid()));
      }
      seen = handed_on(h.states.at(0), c.pid()) == moved;
    }
    CHECK(seen);
    if (sys == "/sys") CHECK(h.get("loadwatch_process_cpu_limit_cores", "svc") == Approx(0.5));
  }
}

TEST_CASE("another user's process: partial reads counted, the target still up",
          "[real][may-skip]") {
  if (::geteuid() != 0) LWTEST_SKIP("not root: cannot switch to another user to provoke EACCES");
  const pid_t root_pid = ::getpid();
  // A child drops to nobody and runs the collector on this (root) process, whose
  // /proc/PID/io it may not read. It reports partial_reads and up.
  Child c([root_pid](int out) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
      say(out, "nosetuid");
      return;
    }
    Harness h({target("root", "pid:" + std::to_string(root_pid), false)});
    h.collect();
    h.collect();
    say(out, std::to_string(static_cast<long>(h.get("loadwatch_target_up", "root"))) + " " +
                 std::to_string(
                     static_cast<long>(h.get("loadwatch_target_partial_reads_total", "root"))));
  });
  const std::string r = c.line();
  REQUIRE(r != "nosetuid");
  CHECK(r == "1 2");  // up; one partial read per sample
}

TEST_CASE("reconfigure keeps the state of unchanged targets", "[real]") {
  TempDir dir;
  const fs::path pidfile = dir.path / "svc.pid";
  Options options;
  Config config;
  FsRoot proc("/proc"), sys("/sys");
  config.targets = {target("svc", "pidfile:" + pidfile.string(), false),
                    target("other", "pid:1", false)};
  auto collector = make_targets_collector(CollectorEnv{options, config, proc, sys, nullptr});
  auto collect = [&] {
    MetricSink sink;
    SampleContext ctx{proc, sys, 0, {}};
    collector->collect(ctx, sink);
    return ctx.targets;
  };
  Child a([](int out) { say(out, "a"); });
  a.line();
  write_file(pidfile, std::to_string(a.pid()));
  collect();
  Child b([](int out) { say(out, "b"); });
  b.line();
  write_file(pidfile, std::to_string(b.pid()));
  collect();  // a restart within one interval: restarts 1

  Config next;
  next.targets = {target("svc", "pidfile:" + pidfile.string(), false),
                  target("new", "pid:1", false)};
  collector->reconfigure(CollectorEnv{options, next, proc, sys, nullptr});
  MetricSink sink;
  SampleContext ctx{proc, sys, 0, {}};
  collector->collect(ctx, sink);
  REQUIRE(ctx.targets.size() == 2);
  CHECK(ctx.targets[0].name == "svc");
  CHECK(ctx.targets[1].name == "new");
  bool found = false;
  for (const auto& fam : sink.families()) {
    if (fam.name != "loadwatch_target_restarts_total") continue;
    for (const auto& m : fam.metric) {
      if (m.label[0].value == "svc") {
        CHECK(m.counter.value == 1);  // kept across the reload
        found = true;
      }
      CHECK(m.label[0].value != "other");  // removed
    }
  }
  CHECK(found);
}

// ---- processes that did not run ----------------------------------------------------------

namespace {

/// Waits (bounded) until `pid` sleeps ('S' in its stat): a process on a run queue, preempted
/// on its way to sleep, has not finished its run, and runs again later.
void wait_asleep(pid_t pid) {
  const bool asleep = eventually([pid] {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'S';
  });
  REQUIRE(asleep);
}

/// Samples `pid` as a member once; returns whether its reads were kept (it had not run).
bool sample_member(ProcessRegistry& reg, pid_t pid, ProcessRecord** out = nullptr) {
  reg.begin_sample();
  ProcessRecord* rec = reg.member(pid);
  REQUIRE(rec);
  if (out) *out = rec;
  const bool quiet = reg.quiet_this_sample() == 1;
  reg.end_sample();
  return quiet;
}

/// A child that waits for a byte on `cmd`, then opens 100 fds and touches 16 MiB (from its
/// main thread, or from a second thread with `threaded`), says "done" and waits again.
Child grower(int cmd, bool threaded) {
  return Child([cmd, threaded](int out) {
    auto grow = [cmd, out] {
      char b;
      if (::read(cmd, &b, 1) != 1) _exit(4);
      for (int i = 0; i < 100; ++i) {
        if (::open("/dev/null", O_RDONLY) < 0) _exit(2);
      }
      constexpr std::size_t kBytes = 16u << 20;
      char* mem = static_cast<char*>(std::malloc(kBytes));
      if (!mem) _exit(3);
      std::memset(mem, 0x5a, kBytes);
      say(out, "done");
    };
    if (!threaded) {
      say(out, "ready");
      grow();
      return;
    }
    std::thread t([grow] {
      grow();
      for (;;) ::pause();
    });
    t.detach();
    say(out, "ready");
  });
}

}  // namespace

TEST_CASE("a process that did not run is not read again; once it runs it is", "[real]") {
  for (const bool threaded : {false, true}) {
    CAPTURE(threaded);
    int cmd[2];
    REQUIRE(::pipe2(cmd, O_CLOEXEC) == 0);
    Child c = grower(cmd[0], threaded);
    REQUIRE(c.line() == "ready");
    wait_asleep(c.pid());
    ProcessRegistry reg(FsRoot("/proc"));
    CHECK_FALSE(sample_member(reg, c.pid()));  // first read
    // It sleeps: its reads are kept. With a thread besides the leader they are not: the
    // leader's schedstat cannot tell whether the other ran.
    CHECK(sample_member(reg, c.pid()) == !threaded);

    REQUIRE(::write(cmd[1], "x", 1) == 1);
    REQUIRE(c.line() == "done");
    ProcessRecord* rec = nullptr;
    CHECK_FALSE(sample_member(reg, c.pid(), &rec));
    CHECK(rec->open_fds == count_fds(c.pid()));
    const double truth_rss = std::stod(status_field(c.pid(), "VmRSS")) * 1024;
    REQUIRE(rec->status.vm_rss_bytes);
    CHECK(static_cast<double>(*rec->status.vm_rss_bytes) == Approx(truth_rss).epsilon(0.01));
    CHECK(*rec->status.vm_rss_bytes >= (16u << 20));
    ::close(cmd[0]);
    ::close(cmd[1]);
  }
}

TEST_CASE("memory another process touches in a sleeping one: seen within the bound", "[real]") {
  // The child maps 16 MiB it never touches and sleeps. This process then writes into it
  // (process_vm_writev): the child's RSS grows by 16 MiB while it does not run.
  constexpr std::size_t kBytes = 16u << 20;
  Child c([](int out) {
    void* mem = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) _exit(3);
    say(out, std::to_string(reinterpret_cast<std::uintptr_t>(mem)));
  });
  const std::uintptr_t addr = std::stoull(c.line());
  ProcessRegistry reg(FsRoot("/proc"));
  ProcessRecord* rec = nullptr;
  wait_asleep(c.pid());
  sample_member(reg, c.pid(), &rec);
  REQUIRE(rec->status.vm_rss_bytes);
  const std::uint64_t before = *rec->status.vm_rss_bytes;

  // Asleep with its memory unchanged: statm stands in for status at the periodic re-read,
  // unless a swap area exists (statm has no swap figure: status is read then).
  std::ifstream swaps_file("/proc/swaps");
  std::string header, area;
  std::getline(swaps_file, header);
  const bool swap_areas = static_cast<bool>(std::getline(swaps_file, area));
  const std::uint64_t status_reads = reg.status_reads();
  for (std::uint32_t i = 0; i < 2 * ProcessRegistry::kQuietRefreshSamples; ++i) {
    REQUIRE(sample_member(reg, c.pid(), &rec));
  }
  CHECK(*rec->status.vm_rss_bytes == before);
  if (swap_areas) {
    CHECK(reg.status_reads() > status_reads);
  } else {
    CHECK(reg.status_reads() == status_reads);
  }

  std::vector<char> page(kBytes, 'x');
  iovec local{page.data(), page.size()};
  iovec remote{reinterpret_cast<void*>(addr), kBytes};
  if (::process_vm_writev(c.pid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kBytes)) {
    LWTEST_SKIP("process_vm_writev refused (ptrace scope): " << std::strerror(errno));
  }
  const double truth = std::stod(status_field(c.pid(), "VmRSS")) * 1024;
  REQUIRE(truth >= static_cast<double>(before + kBytes));
  // Seen within kQuietRefreshSamples samples, the child having stayed asleep throughout.
  std::uint32_t samples = 0, kept = 0;
  while (samples < ProcessRegistry::kQuietRefreshSamples) {
    ++samples;
    kept += sample_member(reg, c.pid(), &rec) ? 1 : 0;
    if (static_cast<double>(*rec->status.vm_rss_bytes) >= truth * 0.99) break;
  }
  CHECK(static_cast<double>(*rec->status.vm_rss_bytes) == Approx(truth).epsilon(0.01));
  CHECK(kept == samples);

  // The fd limit, which another process can change too, keeps its own cadence.
  struct rlimit rl {};
  REQUIRE(::prlimit(c.pid(), RLIMIT_NOFILE, nullptr, &rl) == 0);
  rl.rlim_cur = 512;
  REQUIRE(::prlimit(c.pid(), RLIMIT_NOFILE, &rl, nullptr) == 0);
  bool seen = false;
  for (std::uint32_t i = 0; i < ProcessRegistry::kLimitRefreshSamples && !seen; ++i) {
    sample_member(reg, c.pid(), &rec);
    seen = rec->fd_limit && rec->fd_limit->soft == 512;
  }
  CHECK(seen);
}

TEST_CASE("a sleeping child whose parent exits gets its new parent in the listing", "[real]") {
  // This process adopts orphans for the test's length, so the grandchild can be reaped.
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  std::optional<Child> parent;
  parent.emplace([](int out) {
    const pid_t g = ::fork();
    if (g == 0) {
      for (;;) ::pause();
    }
    say(out, std::to_string(g));
  });
  const pid_t grandchild = std::stoi(parent->line());
  ProcessRegistry reg(FsRoot("/proc"));
  auto ppid_in_listing = [&] {
    reg.begin_sample();
    reg.refresh_listing(true);
    pid_t ppid = -1;
    for (const ProcessRecord* rec : reg.processes()) {
      if (rec->pid() == grandchild) ppid = rec->stat.ppid;
    }
    reg.end_sample();
    return ppid;
  };
  CHECK(ppid_in_listing() == parent->pid());
  ppid_in_listing();  // a quiet sample: its stat is kept
  parent.reset();     // killed and reaped: the grandchild is re-parented to this process
  CHECK(ppid_in_listing() == ::getpid());
  ::kill(grandchild, SIGKILL);
  ::waitpid(grandchild, nullptr, 0);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST_CASE("a process renamed long after it started joins a comm target within the re-check",
          "[real]") {
  // Not a member and no longer new: a full listing checks it only every
  // kScanRecheckSamples samples, so that is how late it may join.
  const std::string name = "lwlate" + std::to_string(::getpid() % 100000);
  Child c([&name](int out) {
    sigset_t usr1, old;
    ::sigemptyset(&usr1);
    ::sigaddset(&usr1, SIGUSR1);
    ::sigprocmask(SIG_BLOCK, &usr1, &old);  // no signal lost before the wait
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    ::sigaction(SIGUSR1, &sa, nullptr);
    say(out, "ready");
    ::sigsuspend(&old);
    ::prctl(PR_SET_NAME, name.c_str());
    say(out, "renamed");
  });
  c.line();
  ProcessRegistry reg(FsRoot("/proc"));
  reg.set_scan_young_seconds(0);  // the child counts as old at once
  const FsRoot sys("/sys");
  auto resolver = make_target_resolver(parse_selector("comm:" + name));
  auto sample = [&] {
    reg.begin_sample();
    reg.refresh_listing(true);
    ResolveContext ctx{reg, sys};
    std::vector<pid_t> roots;
    resolver->resolve(ctx, roots);
    reg.end_sample();
    return roots;
  };
  for (std::uint32_t i = 0; i < 2 * ProcessRegistry::kScanRecheckSamples; ++i) {
    REQUIRE(sample().empty());
  }
  ::kill(c.pid(), SIGUSR1);
  REQUIRE(c.line() == "renamed");
  std::string comm;
  REQUIRE(FsRoot("/proc").read(std::to_string(c.pid()) + "/comm", comm) == 0);
  REQUIRE(comm == name + "\n");  // the kernel's truth, before counting
  std::uint32_t samples = 0;
  bool found = false;
  while (!found && samples < 2 * ProcessRegistry::kScanRecheckSamples) {
    ++samples;
    found = sample() == std::vector<pid_t>{c.pid()};
  }
  CHECK(found);
  CHECK(samples <= ProcessRegistry::kScanRecheckSamples);
}

TEST_CASE("the listing is walked again only while no task was created or reaped", "[real]") {
  ProcessRegistry reg(FsRoot("/proc"));
  reg.set_scan_young_seconds(0);  // children count as old: no stat read keeps them fresh
  std::uint32_t since_read = 0;   // samples since the directory was last read
  auto listed = [&](pid_t pid) {
    const std::uint64_t reads = reg.listings_read();
    reg.begin_sample();
    reg.refresh_listing(true);
    bool found = false;
    for (const ProcessRecord* rec : reg.processes()) found = found || rec->pid() == pid;
    reg.end_sample();
    since_read = reg.listings_read() > reads ? 0 : since_read + 1;
    return found;
  };
  auto loadavg_tasks = [] {
    std::string text;
    REQUIRE(FsRoot("/proc").read("loadavg", text) == 0);
    return text.substr(text.find('/'));  // "tasks last_pid"
  };
  std::optional<Child> c;
  c.emplace([](int out) { say(out, "ready"); });
  c->line();
  // A new process shows at the next sample, a reaped one is gone at the next sample, however
  // many samples the listing was walked again before.
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 20; ++i) REQUIRE(listed(c->pid()));
    const pid_t gone = c->pid();
    c->kill();
    CHECK_FALSE(listed(gone));
    c.emplace([](int out) { say(out, "ready"); });
    c->line();
    CHECK(listed(c->pid()));
  }
  // A thread created between two samples is a task, not a process: never in the listing.
  int cmd[2];
  REQUIRE(::pipe2(cmd, O_CLOEXEC) == 0);
  Child threaded([&cmd](int out) {
    char x = 0;
    if (::read(cmd[0], &x, 1) != 1) _exit(1);
    std::thread([out] {
      say(out, std::to_string(::gettid()));
      for (;;) ::pause();
    }).detach();
  });
  REQUIRE(listed(threaded.pid()));
  REQUIRE(::write(cmd[1], "x", 1) == 1);
  const pid_t tid = std::stoi(threaded.line());
  CHECK(listed(threaded.pid()));
  CHECK_FALSE(listed(tid));
  ::close(cmd[0]);
  ::close(cmd[1]);
  // While loadavg reads the same before and after two samples, the second one does not read
  // the directory (unless kListingReuseSamples are up). Other work on the host may create
  // tasks throughout; then there is nothing to check.
  int checked = 0;
  auto sample = [&] {
    listed(c->pid());
    return since_read == 0;  // the directory was read
  };
  for (int i = 0; i < 200 && checked < 20; ++i) {
    const std::string before = loadavg_tasks();
    sample();
    const std::string mid = loadavg_tasks();
    const std::uint32_t due = ProcessRegistry::kListingReuseSamples - 1;
    const bool bound_up = since_read >= due;
    const bool read = sample();
    const std::string after = loadavg_tasks();
    if (before == mid && mid == after && !bound_up) {
      ++checked;
      INFO("loadavg " << before << " samples since the directory was read " << since_read);
      CHECK_FALSE(read);
    }
  }
  INFO("pairs of samples checked while the host created no task: " << checked);
}

TEST_CASE("topcpu keeps one fd per quiet process, through idle periods, within the budget",
          "[real][topcpu]") {
  // A scratch procfs root: a `stat` this test writes (the host busy or idle) and each child's
  // PID linked to its real /proc/PID, so that the collector reads these processes alone.
  TempDir dir;
  std::uint64_t busy = 0, idle = 0;
  auto host = [&](bool busy_period) {
    busy += busy_period ? 900 : 10;
    idle += busy_period ? 100 : 990;
    std::ofstream(dir.path / "stat", std::ios::trunc)  // in place: the collector keeps its fd
        << "cpu0 " << busy << " 0 0 " << idle << " 0 0 0 0\n";
  };
  auto link = [&](pid_t pid) {
    fs::create_directory_symlink("/proc/" + std::to_string(pid), dir.path / std::to_string(pid));
  };
  std::vector<std::unique_ptr<Child>> sleepers;
  for (int i = 0; i < 8; ++i) {
    sleepers.push_back(std::make_unique<Child>([](int out) { say(out, "ready"); }));
    sleepers.back()->line();
    link(sleepers.back()->pid());
  }
  int cmd[2];
  REQUIRE(::pipe2(cmd, O_CLOEXEC) == 0);
  const std::string comm = unique_comm("topspin");
  Child spinner([&cmd, &comm](int out) {
    ::prctl(PR_SET_NAME, comm.c_str());
    for (int i = 0; i < 4; ++i) {  // a burst of CPU per byte, then asleep again
      char x = 0;
      if (::read(cmd[0], &x, 1) != 1) _exit(1);
      burn_cpu(0.1);
      say(out, "done");
    }
  });
  link(spinner.pid());
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  auto ticks = [&] {  // the spinner's utime + stime, by this test's reading of its stat
    std::ifstream in("/proc/" + std::to_string(spinner.pid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    }
    return utime + stime;
  };
  auto spin = [&] {
    const double before = ticks();
    REQUIRE(::write(cmd[1], "x", 1) == 1);
    REQUIRE(spinner.line() == "done");
    wait_asleep(spinner.pid());
    return ticks() - before;
  };
  for (const auto& s : sleepers) wait_asleep(s->pid());
  wait_asleep(spinner.pid());

  Options options;
  Config config;
  const FsRoot root(dir.path.string());
  const FsRoot sys("/sys");
  auto collector = make_topcpu_collector(CollectorEnv{options, config, root, sys, nullptr});
  double now = 1000;
  auto scan = [&](bool busy_period) {
    host(busy_period);
    SampleContext ctx{root, sys, now, {}};
    ctx.monotonic = now;
    MetricSink sink;
    collector->collect(ctx, sink);
    now += kTopCpuScanSeconds;
    std::map<std::string, double> named;
    for (const auto& fam : sink.families()) {
      for (const auto& m : fam.metric) named[m.label.at(0).value] = m.gauge.value;
    }
    return named;
  };
  // Every fd the collector keeps is one of the budget's.
  const FdBudget& budget = FdBudget::shared();
  const long fds0 = static_cast<long>(count_fds(::getpid())), used0 = budget.used();
  auto held = [&] {
    const long fds = static_cast<long>(count_fds(::getpid())) - fds0;
    CHECK(budget.used() - used0 == fds - 1);  // less the root's fd (a scratch `stat` is not kept)
    return fds - 1;
  };

  const long procs = 9;
  CHECK(scan(true).empty());  // the base: each stat read through a kept fd
  CHECK(held() == procs);
  CHECK(scan(true).empty());  // each schedstat read before its stat: two fds each
  CHECK(held() == 2 * procs);
  CHECK(scan(true).empty());  // nobody ran: their schedstat fds alone are kept
  CHECK(held() == procs);
  double used = spin();
  auto named = scan(true);  // the spinner's stat is opened again and kept while it runs
  CHECK(named.size() == 1);
  CHECK(named[comm] == Approx(used / hz / kTopCpuScanSeconds));
  CHECK(held() == procs + 1);

  // An idle period keeps them, names nothing, and makes the next scan a base. A process that
  // exits meanwhile is let go at that scan; what ran meanwhile is not counted.
  CHECK(scan(false).empty());
  CHECK(held() == procs + 1);
  fs::remove(dir.path / std::to_string(sleepers[0]->pid()));
  sleepers[0]->kill();
  spin();
  CHECK(scan(true).empty());
  CHECK(held() == procs);  // the spinner's two, the other sleepers' schedstat fds
  used = spin();
  named = scan(true);
  CHECK(named.size() == 1);
  CHECK(named[comm] == Approx(used / hz / kTopCpuScanSeconds));

  // Past kTopCpuIdlePeriodsKept idle periods in a row, every fd is let go.
  for (int i = 1; i < kTopCpuIdlePeriodsKept; ++i) CHECK(scan(false).empty());
  CHECK(held() == procs);
  CHECK(scan(false).empty());
  CHECK(held() == 0);
  ::close(cmd[0]);
  ::close(cmd[1]);
}
