// Host collectors (stat, softirqs, meminfo, loadavg, filefd) against the fixture tree
// tests/fixtures/proc captured from a real machine (tests/fixtures/capture-host.sh). The
// expected numbers are those of the captured files: re-capturing means updating them here.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "collectors/collector.h"
#include "collectors/filefd.h"
#include "collectors/loadavg.h"
#include "collectors/meminfo.h"
#include "collectors/pressure.h"
#include "collectors/softirqs.h"
#include "collectors/stat.h"
#include "collectors/throttling.h"
#include "collectors/topcpu.h"
#include "collectors/vmstat.h"
#include "procfs/stat.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
using prometheus::MetricType;

namespace {

const FsRoot kFixtureProc(fixture_path("proc"));
const FsRoot kFixtureSys(fixture_path("sys"));

/// Builds a collector with a default config and runs one sample against `proc`.
struct Harness {
  Options options;
  Config config;
  const FsRoot& proc;
  std::unique_ptr<Collector> collector;

  Harness(const FsRoot& root, std::unique_ptr<Collector> (*make)(const CollectorEnv&))
      : proc(root) {
    CollectorEnv env{options, config, proc, kFixtureSys};
    collector = make(env);
  }

  std::vector<prometheus::MetricFamily> sample() {
    SampleContext ctx{proc, kFixtureSys, 0, {}};
    MetricSink sink;
    collector->collect(ctx, sink);
    return sink.take();
  }
};

const prometheus::MetricFamily& family(const std::vector<prometheus::MetricFamily>& fams,
                                       const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return f;
  }
  FAIL("no family " << name);
  throw std::logic_error("unreachable");
}

bool has_family(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return true;
  }
  return false;
}

using LabelList = std::vector<std::pair<std::string, std::string>>;

const prometheus::ClientMetric& metric(const prometheus::MetricFamily& fam, const LabelList& want) {
  for (const auto& m : fam.metric) {
    if (m.label.size() != want.size()) continue;
    bool same = true;
    for (size_t i = 0; i < want.size(); ++i) {
      same = same && m.label[i].name == want[i].first && m.label[i].value == want[i].second;
    }
    if (same) return m;
  }
  FAIL("no series of " << fam.name << " with the wanted labels");
  throw std::logic_error("unreachable");
}

/// The only series of family `name`, checked to be unlabelled, of `type` and documented.
const prometheus::ClientMetric& only_series(const std::vector<prometheus::MetricFamily>& fams,
                                            const std::string& name, MetricType type) {
  const auto& f = family(fams, name);
  CHECK(f.type == type);
  REQUIRE(f.metric.size() == 1);
  CHECK(f.metric[0].label.empty());
  CHECK_FALSE(f.help.empty());
  return f.metric[0];
}

double gauge(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  return only_series(fams, name, MetricType::Gauge).gauge.value;
}

double counter(const std::vector<prometheus::MetricFamily>& fams, const std::string& name) {
  return only_series(fams, name, MetricType::Counter).counter.value;
}

double clk_tck() {
  long hz = ::sysconf(_SC_CLK_TCK);
  REQUIRE(hz > 0);
  return static_cast<double>(hz);
}

/// Each host collector with the file below the procfs root it reads.
struct HostFile {
  const char* file;
  std::unique_ptr<Collector> (*make)(const CollectorEnv&);
};
const HostFile kHostFiles[] = {{"stat", make_stat_collector},
                               {"softirqs", make_softirqs_collector},
                               {"meminfo", make_meminfo_collector},
                               {"loadavg", make_loadavg_collector},
                               {"sys/fs/file-nr", make_filefd_collector}};

/// A scratch procfs root, removed when the test ends.
struct TempProc {
  std::filesystem::path dir;
  TempProc() {
    std::string templ = (std::filesystem::temp_directory_path() / "loadwatch-host-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    dir = templ;
  }
  ~TempProc() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories((dir / rel).parent_path());
    std::ofstream(dir / rel, std::ios::trunc) << text;
  }
};

}  // namespace

TEST_CASE("stat collector exports per-CPU seconds by mode from the fixture", "[stat]") {
  Harness h(kFixtureProc, make_stat_collector);
  const auto fams = h.sample();
  const auto& cpu = family(fams, "loadwatch_cpu_seconds_total");
  CHECK(cpu.type == MetricType::Counter);
  CHECK_FALSE(cpu.help.empty());
  // Fixture: cpu0 3438 0 2639 22303 23 0 83 0 0 0 / cpu1 4982 0 4021 18856 500 0 150 0 0 0;
  // the aggregate "cpu" line gives no series, guest columns give none.
  REQUIRE(cpu.metric.size() == 2 * 8);
  const double hz = clk_tck();
  const std::uint64_t cpu0[] = {3438, 0, 2639, 22303, 23, 0, 83, 0};
  const std::uint64_t cpu1[] = {4982, 0, 4021, 18856, 500, 0, 150, 0};
  for (size_t i = 0; i < kCpuModes.size(); ++i) {
    INFO("mode " << kCpuModes[i]);
    CHECK(metric(cpu, {{"cpu", "0"}, {"mode", kCpuModes[i]}}).counter.value == cpu0[i] / hz);
    CHECK(metric(cpu, {{"cpu", "1"}, {"mode", kCpuModes[i]}}).counter.value == cpu1[i] / hz);
  }
  for (const auto& m : cpu.metric) {
    CHECK(m.label[0].value != "");
    CHECK(m.label[1].value != "guest");
    CHECK(m.label[1].value != "guest_nice");
  }
  CHECK(counter(fams, "loadwatch_context_switches_total") == 412953);
  CHECK(counter(fams, "loadwatch_forks_total") == 7846);
  CHECK(gauge(fams, "loadwatch_procs_running") == 4);
  CHECK(gauge(fams, "loadwatch_procs_blocked") == 0);
  CHECK(fams.size() == 5);
}

TEST_CASE("stat collector holds back small decreases and accepts a CPU reset", "[stat]") {
  TempProc tmp;
  const FsRoot root(tmp.dir.string());
  Harness h(root, make_stat_collector);
  const double hz = clk_tck();
  auto seconds = [&](const std::string& cpu, const std::string& mode) {
    const auto fams = h.sample();
    return metric(family(fams, "loadwatch_cpu_seconds_total"), {{"cpu", cpu}, {"mode", mode}})
        .counter.value;
  };

  tmp.write("stat", "cpu0 100 0 50 1000 40 0 5 0\ncpu1 1 1 1 1\n");
  CHECK(seconds("0", "idle") == 1000 / hz);
  // NO_HZ idle/iowait accounting moved back a little: keep the previous values.
  tmp.write("stat", "cpu0 101 0 50 990 30 0 5 0\ncpu1 1 1 1 1\n");
  CHECK(seconds("0", "idle") == 1000 / hz);
  CHECK(seconds("0", "iowait") == 40 / hz);
  // Going forward again is exported as read.
  tmp.write("stat", "cpu0 102 0 50 1010 45 0 5 0\ncpu1 1 1 1 1\n");
  CHECK(seconds("0", "idle") == 1010 / hz);
  // idle dropped by more than 3 s: the CPU's counters restarted (hotplug); take them.
  tmp.write("stat", "cpu0 5 0 5 10 1 0 0 0\ncpu1 1 1 1 1\n");
  CHECK(seconds("0", "idle") == 10 / hz);
  // cpu1 went offline: no series for it; back online, its counters start where they are.
  tmp.write("stat", "cpu0 5 0 5 11 1 0 0 0\n");
  {
    const auto fams = h.sample();
    for (const auto& m : family(fams, "loadwatch_cpu_seconds_total").metric) {
      CHECK(m.label[0].value == "0");
    }
  }
  tmp.write("stat", "cpu0 5 0 5 11 1 0 0 0\ncpu1 0 0 0 0\n");
  CHECK(seconds("1", "idle") == 0);
}

TEST_CASE("stat collector exports only the modes an old kernel prints", "[stat]") {
  TempProc tmp;
  tmp.write("stat", "cpu  1 2 3 4\ncpu0 1 2 3 4\nctxt 9\nprocesses 8\n");
  const FsRoot root(tmp.dir.string());
  Harness h(root, make_stat_collector);
  const auto fams = h.sample();
  CHECK(family(fams, "loadwatch_cpu_seconds_total").metric.size() == 4);
  CHECK(counter(fams, "loadwatch_context_switches_total") == 9);
  CHECK_FALSE(has_family(fams, "loadwatch_procs_running"));
  CHECK_FALSE(has_family(fams, "loadwatch_procs_blocked"));
}

TEST_CASE("softirqs collector sums each type over CPUs from the fixture", "[softirqs]") {
  Harness h(kFixtureProc, make_softirqs_collector);
  const auto fams = h.sample();
  REQUIRE(fams.size() == 1);
  const auto& f = family(fams, "loadwatch_softirqs_total");
  CHECK(f.type == MetricType::Counter);
  CHECK_FALSE(f.help.empty());
  REQUIRE(f.metric.size() == 10);
  // Fixture rows (CPU0 + CPU1).
  CHECK(metric(f, {{"type", "HI"}}).counter.value == 0);
  CHECK(metric(f, {{"type", "TIMER"}}).counter.value == 7745 + 8705);
  CHECK(metric(f, {{"type", "NET_TX"}}).counter.value == 3 + 1);
  CHECK(metric(f, {{"type", "NET_RX"}}).counter.value == 2425 + 2790);
  CHECK(metric(f, {{"type", "BLOCK"}}).counter.value == 48396);
  CHECK(metric(f, {{"type", "IRQ_POLL"}}).counter.value == 0);
  CHECK(metric(f, {{"type", "TASKLET"}}).counter.value == 4 + 3);
  CHECK(metric(f, {{"type", "SCHED"}}).counter.value == 19580 + 19094);
  CHECK(metric(f, {{"type", "HRTIMER"}}).counter.value == 0);
  CHECK(metric(f, {{"type", "RCU"}}).counter.value == 18932 + 21899);
}

TEST_CASE("meminfo collector exports bytes from the fixture", "[meminfo]") {
  Harness h(kFixtureProc, make_meminfo_collector);
  const auto fams = h.sample();
  CHECK(gauge(fams, "loadwatch_memory_total_bytes") == 24683620.0 * 1024);
  CHECK(gauge(fams, "loadwatch_memory_available_bytes") == 24290704.0 * 1024);
  CHECK(gauge(fams, "loadwatch_memory_swap_total_bytes") == 0);
  CHECK(gauge(fams, "loadwatch_memory_swap_free_bytes") == 0);
  CHECK(fams.size() == 4);
}

TEST_CASE("meminfo collector omits MemAvailable on a kernel without it", "[meminfo]") {
  TempProc tmp;
  tmp.write("meminfo", "MemTotal:  2048 kB\nMemFree:  1024 kB\n");
  const FsRoot root(tmp.dir.string());
  Harness h(root, make_meminfo_collector);
  const auto fams = h.sample();
  CHECK(gauge(fams, "loadwatch_memory_total_bytes") == 2048.0 * 1024);
  CHECK_FALSE(has_family(fams, "loadwatch_memory_available_bytes"));
}

TEST_CASE("loadavg collector exports the three averages from the fixture", "[loadavg]") {
  Harness h(kFixtureProc, make_loadavg_collector);
  const auto fams = h.sample();
  REQUIRE(fams.size() == 3);
  CHECK(gauge(fams, "loadwatch_load1") == 2.12);
  CHECK(gauge(fams, "loadwatch_load5") == 0.85);
  CHECK(gauge(fams, "loadwatch_load15") == 0.33);
}

TEST_CASE("filefd collector exports allocated and maximum from the fixture", "[filefd]") {
  Harness h(kFixtureProc, make_filefd_collector);
  const auto fams = h.sample();
  REQUIRE(fams.size() == 2);
  CHECK(gauge(fams, "loadwatch_filefd_allocated") == 572);
  CHECK(gauge(fams, "loadwatch_filefd_maximum") == 2466160);
}

TEST_CASE("host collectors throw, naming the path, when their file is missing", "[errors]") {
  TempProc tmp;  // empty root
  const FsRoot root(tmp.dir.string());
  for (const auto& c : kHostFiles) {
    INFO(c.file);
    Harness h(root, c.make);
    CHECK_THROWS_WITH(h.sample(),
                      Catch::Contains(root.path(c.file)) && Catch::Contains("No such file"));
  }
}

TEST_CASE("host collectors throw, naming the path, on a malformed file", "[errors]") {
  TempProc tmp;
  const FsRoot root(tmp.dir.string());
  for (const auto& c : kHostFiles) {
    INFO(c.file);
    tmp.write(c.file, "garbage\x01\n");
    Harness h(root, c.make);
    CHECK_THROWS_WITH(h.sample(), Catch::StartsWith(root.path(c.file) + ": "));
  }
}

TEST_CASE("host collectors are in the collector table, enabled, in order", "[table]") {
  const char* want[] = {"stat", "softirqs", "meminfo", "loadavg", "filefd"};
  const auto& table = collector_table();
  size_t next = 0;
  for (const auto& spec : table) {
    if (next < std::size(want) && std::string(spec.name) == want[next]) {
      CHECK(spec.enabled_by_default);
      CHECK(std::string(spec.help).size() > 0);
      CHECK(spec.make);
      ++next;
    }
  }
  CHECK(next == std::size(want));
}

TEST_CASE("pressure collector exports PSI totals in seconds; no PSI is no data", "[pressure]") {
  Harness h(kFixtureProc, make_pressure_collector);
  auto fams = h.sample();
  // Fixture pressure/cpu: some total=89890902, full total=0 (microseconds).
  CHECK(counter(fams, "loadwatch_pressure_cpu_waiting_seconds_total") == Approx(89.890902));
  CHECK(counter(fams, "loadwatch_pressure_cpu_stalled_seconds_total") == 0);
  CHECK(counter(fams, "loadwatch_pressure_io_waiting_seconds_total") == Approx(6.787849));
  CHECK(counter(fams, "loadwatch_pressure_io_stalled_seconds_total") == Approx(5.345477));
  CHECK(has_family(fams, "loadwatch_pressure_memory_waiting_seconds_total"));
  CHECK(fams.size() == 6);

  TempProc tmp;  // a kernel without /proc/pressure
  const FsRoot root(tmp.dir.string());
  Harness none(root, make_pressure_collector);
  CHECK(none.sample().empty());
  tmp.write("pressure/cpu", "garbage\n");
  CHECK_THROWS_WITH(none.sample(), Catch::StartsWith(root.path("pressure/cpu") + ": "));
}

TEST_CASE("vmstat collector exports the swap page counters", "[vmstat]") {
  Harness h(kFixtureProc, make_vmstat_collector);
  auto fams = h.sample();
  CHECK(counter(fams, "loadwatch_swap_in_pages_total") == 0);
  CHECK(counter(fams, "loadwatch_swap_out_pages_total") == 0);
  TempProc tmp;
  const FsRoot root(tmp.dir.string());
  tmp.write("vmstat", "nr_free_pages 1\npswpin 12\npswpout 34\n");
  Harness swapping(root, make_vmstat_collector);
  fams = swapping.sample();
  CHECK(counter(fams, "loadwatch_swap_in_pages_total") == 12);
  CHECK(counter(fams, "loadwatch_swap_out_pages_total") == 34);
  const FsRoot nowhere(tmp.dir.string() + "/nowhere");
  Harness missing(nowhere, make_vmstat_collector);
  CHECK_THROWS_WITH(missing.sample(), Catch::Contains("No such file"));
}

TEST_CASE("throttling collector reads the cpu.stat of the cgroup whose quota binds a target",
          "[throttling]") {
  // The fixture sysfs holds a v1 cgroup "app" with a 0.2-core quota, and the cpu.stat it had
  // after a busy loop ran in it for 1.5 s: 16 periods, 14 throttled, 0.327767464 s.
  TempProc tmp;
  const FsRoot proc(tmp.dir.string());
  tmp.write("100/cgroup", "2:cpuacct:/\n1:cpu:/app\n0::/\n");
  tmp.write("101/cgroup", "1:cpu:/\n0::/\n");                  // no quota: nothing can throttle it
  tmp.write("102/cgroup", "2:cpuacct:/\n1:cpu:/app\n0::/\n");  // 100's cgroups: walked once
  Options options;
  Config config;
  CollectorEnv env{options, config, proc, kFixtureSys};
  auto collector = make_throttling_collector(env);
  SampleContext ctx{proc, kFixtureSys, 0, {}};
  ctx.targets.push_back(TargetState{"app", "pid:100", true, {100, 102}, {}, {}, {}, {}});
  ctx.targets.push_back(TargetState{"free", "pid:101", true, {101}, {}, {}, {}, {}});
  MetricSink sink;
  collector->collect(ctx, sink);
  auto fams = sink.take();
  REQUIRE(fams.size() == 3);
  auto value = [&](const char* name) {
    const auto& f = family(fams, name);
    CHECK(f.type == MetricType::Counter);
    REQUIRE(f.metric.size() == 1);  // only the target a quota binds
    return metric(f, {{"target", "app"}}).counter.value;
  };
  CHECK(value("loadwatch_process_cpu_periods_total") == 16);
  CHECK(value("loadwatch_process_cpu_throttled_periods_total") == 14);
  CHECK(value("loadwatch_process_cpu_throttled_seconds_total") == Approx(0.327767464));
}

TEST_CASE("throttling collector binds from the cgroup texts the CPU limit read, not the files",
          "[throttling]") {
  // PID 200 has no /proc entry here: only the text the targets collector handed on can bind
  // it. Then, 15 samples on without texts, its own file is looked up, and it is gone.
  TempProc tmp;
  const FsRoot proc(tmp.dir.string());
  tmp.write("loadavg", "0 0 0 1/1 1\n");
  Options options;
  Config config;
  CollectorEnv env{options, config, proc, kFixtureSys};
  auto collector = make_throttling_collector(env);
  auto periods = [&](bool texts) {
    SampleContext ctx{proc, kFixtureSys, 0, {}};
    TargetState t{"app", "comm:app", true, {200}, {}, {}, {}, {}};
    if (texts) t.cgroups = {{200, "2:cpuacct:/\n1:cpu:/app\n0::/\n"}};
    ctx.targets.push_back(t);
    MetricSink sink;
    collector->collect(ctx, sink);
    for (const auto& f : sink.take()) {
      if (f.name == "loadwatch_process_cpu_periods_total") return f.metric.at(0).counter.value;
    }
    return -1.0;
  };
  CHECK(periods(true) == 16);
  for (int i = 1; i < 15; ++i) CHECK(periods(false) == 16);  // kept for 15 samples
  CHECK(periods(false) == -1);  // looked up again: no /proc/200/cgroup, no binding
}

namespace {

/// /proc/PID/stat of a process named `comm` with `ticks` of user time, started at `start`.
std::string pid_stat(int pid, const std::string& comm, std::uint64_t ticks, std::uint64_t start) {
  return std::to_string(pid) + " (" + comm + ") R 1 1 1 0 -1 4194304 0 0 0 0 " +
         std::to_string(ticks) + " 0 0 0 20 0 1 0 " + std::to_string(start) +
         " 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
}

/// One sample at monotonic time `now`, its wall clock `wall` seconds (default: `now`).
std::map<std::string, double> top_cpu(Collector& c, const FsRoot& root, double now,
                                      std::optional<double> wall = std::nullopt) {
  SampleContext ctx{root, kFixtureSys, wall.value_or(now), {}};
  ctx.monotonic = now;
  MetricSink sink;
  c.collect(ctx, sink);
  std::map<std::string, double> out;
  for (const auto& f : sink.take()) {
    if (f.name != "loadwatch_top_cpu_cores") continue;
    CHECK_FALSE(f.help.empty());
    for (const auto& m : f.metric) out[m.label.at(0).value] = m.gauge.value;
  }
  return out;
}

/// A scratch procfs root and a topcpu collector reading it.
struct TopCpuFixture {
  TempProc tmp;
  FsRoot root{tmp.dir.string()};
  std::unique_ptr<Collector> c;
  std::uint64_t hz = static_cast<std::uint64_t>(clk_tck());
  TopCpuFixture() {
    Options options;
    Config config;
    c = make_topcpu_collector(CollectorEnv{options, config, root, kFixtureSys});
  }
};

}  // namespace

TEST_CASE("topcpu collector names the busiest process names by their CPU", "[topcpu]") {
  TopCpuFixture f;
  auto& [tmp, root, c, hz] = f;
  tmp.write("101/stat", pid_stat(101, "hog", 0, 5));
  tmp.write("102/stat", pid_stat(102, "hog", 0, 6));
  tmp.write("103/stat", pid_stat(103, "app) x", 0, 7));  // a name with ") "
  tmp.write("104/stat", pid_stat(104, "idle", 0, 8));
  tmp.write("self/stat", pid_stat(1, "not a pid", 0, 1));
  CHECK(top_cpu(*c, root, 1000).empty());  // the first scan has nothing to compare with

  // Over 5 s: each hog 2.5 s of CPU (0.5 cores), the app 1 s (0.2), idle nothing. Process 105
  // is new: its CPU since its start is not this interval's.
  tmp.write("101/stat", pid_stat(101, "hog", 5 * hz / 2, 5));
  tmp.write("102/stat", pid_stat(102, "hog", 5 * hz / 2, 6));
  tmp.write("103/stat", pid_stat(103, "app) x", hz, 7));
  tmp.write("105/stat", pid_stat(105, "app) x", 50 * hz, 9));
  auto top = top_cpu(*c, root, 1005);
  CHECK(top.size() == 2);
  CHECK(top["hog"] == Approx(1.0));
  CHECK(top["app) x"] == Approx(0.2));

  // Within 5 s of the scan the same figures are exported again, without reading /proc.
  tmp.write("101/stat", pid_stat(101, "hog", 100 * hz, 5));
  CHECK(top_cpu(*c, root, 1006) == top);

  // At most kTopCpuNames names, the busiest.
  for (int i = 0; i < 8; ++i)
    tmp.write(std::to_string(200 + i) + "/stat", pid_stat(200 + i, "n" + std::to_string(i), 0, 20));
  top_cpu(*c, root, 1010);
  for (int i = 0; i < 8; ++i) {
    tmp.write(
        std::to_string(200 + i) + "/stat",
        pid_stat(200 + i, "n" + std::to_string(i), static_cast<std::uint64_t>(i + 1) * hz, 20));
  }
  top = top_cpu(*c, root, 1015);
  CHECK(top.size() == kTopCpuNames);
  CHECK(top.count("n7"));
  CHECK_FALSE(top.count("n0"));
}

TEST_CASE("topcpu's cores are per monotonic second, whatever the wall clock does", "[topcpu]") {
  TopCpuFixture f;
  auto& [tmp, root, c, hz] = f;
  tmp.write("101/stat", pid_stat(101, "hog", 0, 5));
  CHECK(top_cpu(*c, root, 1000).empty());
  // 5 s later by the monotonic clock, the wall clock set 20 s ahead: 2.5 s of CPU in 5 s.
  tmp.write("101/stat", pid_stat(101, "hog", 5 * hz / 2, 5));
  auto top = top_cpu(*c, root, 1005, 1025);
  CHECK(top["hog"] == Approx(0.5));  // not 2.5 s over the 25 s the wall clock moved
  // And set back 30 s: the next scan comes 5 monotonic seconds on, as usual.
  tmp.write("101/stat", pid_stat(101, "hog", 5 * hz, 5));
  CHECK(top_cpu(*c, root, 1008, 998) == top);  // within the scan period: the same figures
  top = top_cpu(*c, root, 1010, 1000);
  CHECK(top["hog"] == Approx(0.5));
}

TEST_CASE("topcpu reads the stat of a one-thread process only when its schedstat moved",
          "[topcpu]") {
  TopCpuFixture f;
  auto& [tmp, root, c, hz] = f;
  // 101 has one thread, 102 two (field 20 of the stat).
  auto two_threads = [](std::string text) {
    return text.replace(text.find(" 20 0 1 0 "), 10, " 20 0 2 0 ");
  };
  auto write = [&](std::uint64_t ticks, const char* sched) {
    tmp.write("101/stat", pid_stat(101, "one", ticks, 5));
    tmp.write("102/stat", two_threads(pid_stat(102, "two", ticks, 6)));
    tmp.write("101/schedstat", sched);
    tmp.write("102/schedstat", sched);
  };
  write(0, "1000 0 1\n");
  CHECK(top_cpu(*c, root, 1000).empty());  // the base; 101 is known to have one thread
  write(0, "1000 0 1\n");
  CHECK(top_cpu(*c, root, 1005).empty());  // 101's schedstat read before its stat
  // The stat moved but not the schedstat: a process that did not run is not read again. A
  // fixture can say so; the kernel cannot. The process with two threads is read (its
  // schedstat is its leader's only).
  write(5 * hz / 2, "1000 0 1\n");
  auto top = top_cpu(*c, root, 1010);
  CHECK(top.size() == 1);
  CHECK(top["two"] == Approx(0.5));
  // Once the schedstat moves, the stat is read: what was used since the last read counts.
  write(5 * hz, "2000 0 2\n");
  top = top_cpu(*c, root, 1015);
  CHECK(top["one"] == Approx(1.0));
  CHECK(top["two"] == Approx(0.5));
}

TEST_CASE("topcpu reads processes only while the host's CPU is busy", "[topcpu]") {
  TopCpuFixture f;
  auto& [tmp, root, c, hz] = f;
  // Two CPUs; `busy` user ticks and `idle` idle ticks on each.
  auto host = [&](std::uint64_t busy, std::uint64_t idle) {
    std::string line = " " + std::to_string(busy) + " 0 0 " + std::to_string(idle) + " 0 0 0 0\n";
    tmp.write("stat", "cpu0" + line + "cpu1" + line + "ctxt 1\n");
  };
  auto hogs = [&](std::uint64_t ticks) {
    tmp.write("101/stat", pid_stat(101, "hog", ticks, 5));
    tmp.write("102/stat", pid_stat(102, "hog", ticks, 6));
  };
  host(100, 1000);
  hogs(0);
  CHECK(top_cpu(*c, root, 1000).empty());  // the first period sets the base

  // 10 % busy over 5 s: the hogs' CPU is not read, so nothing is named.
  host(150, 1450);
  hogs(hz);
  CHECK(top_cpu(*c, root, 1005).empty());

  // 90 % busy: this scan sets the processes' base, the next one names them.
  host(600, 1500);
  hogs(2 * hz);
  CHECK(top_cpu(*c, root, 1010).empty());
  host(1050, 1550);
  hogs(2 * hz + 5 * hz / 2);
  auto top = top_cpu(*c, root, 1015);
  CHECK(top.size() == 1);
  CHECK(top["hog"] == Approx(1.0));

  // Idle again: the names go.
  host(1060, 2040);
  hogs(3 * hz);
  CHECK(top_cpu(*c, root, 1020).empty());
}
