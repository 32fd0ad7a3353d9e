#include <catch2/catch.hpp>

#include "analysis/bottleneck.h"

using namespace loadwatch::analysis;

namespace {

/// A knee phase where every check fires; tests switch them off one by one.
PhaseStats everything_saturated() {
  PhaseStats p;
  p.name = "100";
  p.users = 100;
  p.p95_seconds = 0.200;
  TargetPhaseStats app;
  app.name = "app";
  app.cpu_cores = 0.99;
  app.busiest_process_core_share = 0.98;
  app.open_fds_max = 950;
  app.fd_limit = 1024;
  TargetPhaseStats gen;
  gen.name = "locust";
  gen.cpu_cores = 0.5;
  gen.cpu_limit_cores = 0.5;
  gen.busiest_process_core_share = 0.5;
  p.targets = {app, gen};
  p.generator_target = "locust";
  p.targets[0].throttled_period_ratio = 0.6;
  p.host.cores = 4;
  p.host.cpu_busy_cores = 3.8;
  p.host.others_cpu_cores = 2.31;
  p.host.cpu_pressure_ratio = 0.9;
  p.host.run_queue_mean = 7;
  p.host.memory_pressure_ratio = 0.3;
  p.host.io_pressure_ratio = 0.4;
  p.host.softirq_cores = 1.0;
  p.host.listen_overflows = 40;
  p.host.ephemeral_port_ratio_max = 0.9;
  p.mock.error_ratio = 0.05;
  return p;
}

TargetPhaseStats cpu_target(const std::string& name, double cores, double busiest) {
  TargetPhaseStats t;
  t.name = name;
  t.cpu_cores = cores;
  t.busiest_process_core_share = busiest;
  return t;
}

std::vector<Check> checks_of(const Bottleneck& b) {
  std::vector<Check> out;
  for (const Finding& f : b.findings) out.push_back(f.check);
  return out;
}

}  // namespace

TEST_CASE("a CPU the phase has no figure for is named as not known, never ruled out") {
  // A phase with low targets' CPU and its other figures quiet, but no host CPU (a source
  // without it, or rates left out): nothing fires, and the host's CPU may still be the limit.
  PhaseStats p;
  p.name = "8";
  p.users = 8;
  p.targets = {cpu_target("app", 0.2, 0.2), cpu_target("db", 0.1, 0.1)};
  p.targets[1].cpu_cores.reset();
  p.host.time_wait_max = 10;
  p.host.listen_overflows = 0;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.assessed);
  CHECK(b.findings.empty());
  CHECK_THAT(b.summary, Catch::StartsWith("no limit loadwatch can see: "));
  CHECK_THAT(b.summary, Catch::EndsWith("; not known in this phase: the host's CPU, target db's "
                                        "CPU, which may be the limit"));
  CHECK_THAT(b.summary, !Catch::Contains("outside what it watches"));
  // With the figures there and low, it is said to lie outside.
  p.targets[1].cpu_cores = 0.1;
  p.host.cores = 2;
  p.host.cpu_busy_cores = 0.4;
  b = find_bottleneck(p, nullptr, nullptr);
  CHECK_THAT(b.summary, Catch::EndsWith("; the limit is outside what it watches"));
}

TEST_CASE("the checks run in the documented order and the first finding is the verdict") {
  PhaseStats p = everything_saturated();
  PhaseStats before = p;
  before.host.listen_overflows = 0;
  Bottleneck b = find_bottleneck(p, &before, &before);
  REQUIRE(b.assessed);
  CHECK(checks_of(b) == std::vector<Check>{Check::target_cpu, Check::generator_cpu, Check::host_cpu,
                                           Check::throttling, Check::memory, Check::iowait,
                                           Check::mock, Check::listen_overflows, Check::ports,
                                           Check::fds, Check::softirq});
  CHECK_THAT(b.summary, Catch::StartsWith("the target's CPU (app)"));
  CHECK_THAT(b.summary, Catch::Contains("0.98 of one core"));
  CHECK(b.findings[0].value == 0.98);
  CHECK(b.findings[0].threshold == kProcessCoreSaturation);

  // Switch off each cause in order: the verdict moves to the next one.
  p.targets[0].busiest_process_core_share = 0.5;
  p.targets[0].cpu_cores = 0.5;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::generator_cpu);
  CHECK_THAT(find_bottleneck(p, &before, &before).summary, Catch::Contains("locust"));
  p.targets[1].cpu_cores = 0.2;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::host_cpu);
  p.host.cpu_busy_cores = 1.0;
  p.host.cpu_pressure_ratio = 0.1;
  p.host.run_queue_mean = 2;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::throttling);
  p.targets[0].throttled_period_ratio = 0.1;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::memory);
  p.host.memory_pressure_ratio = 0.01;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::iowait);
  p.host.io_pressure_ratio = 0.01;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::mock);
  p.mock.error_ratio = 0;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::listen_overflows);
  p.host.listen_overflows = 0;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::ports);
  p.host.ephemeral_port_ratio_max = 0.1;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::fds);
  p.targets[0].open_fds_max = 100;
  CHECK(find_bottleneck(p, &before, &before).findings.front().check == Check::softirq);
  p.host.softirq_cores = 0.1;
  Bottleneck none = find_bottleneck(p, &before, &before);
  CHECK(none.assessed);
  CHECK(none.findings.empty());
  CHECK_THAT(none.summary, Catch::StartsWith("no limit loadwatch can see: "));
  // The evidence that rules the rest out is in the sentence; no guess at a culprit.
  CHECK_THAT(none.summary, Catch::Contains("host CPU 1.00 of 4 cores busy"));
  CHECK_THAT(none.summary, Catch::Contains("CPU pressure 10 %"));
  CHECK_THAT(none.summary, Catch::Contains("no quota throttling"));
  CHECK_THAT(none.summary, Catch::Contains("no memory pressure or swapping"));
  CHECK_THAT(none.summary, !Catch::Contains("database"));
}

TEST_CASE("a target at 90 % of its cores saturates even with no process at one core") {
  PhaseStats p;
  p.host.cores = 2;
  p.targets = {cpu_target("app", 1.85, 0.47)};
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::target_cpu);
  CHECK(b.findings[0].value == Approx(0.925));
  // 1.7 of 2 cores (85 %) is not saturated.
  p.targets[0].cpu_cores = 1.7;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  // ... unless a quota of 1.8 cores is its limit.
  p.targets[0].cpu_limit_cores = 1.8;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.size() == 1);
}

TEST_CASE("the generator's CPU is only judged on the target flagged as the generator") {
  PhaseStats p;
  p.host.cores = 8;
  p.targets = {cpu_target("wrk", 0.97, 0.97)};
  // Not flagged: it is a target like any other.
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.at(0).check == Check::target_cpu);
  p.generator_target = "wrk";
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  CHECK(b.findings.at(0).check == Check::generator_cpu);
  CHECK_THAT(b.summary, Catch::StartsWith("the load generator's CPU (wrk)"));
}

TEST_CASE("mock latency counts when it grew and is a real share of the generator's p95") {
  PhaseStats lowest, knee;
  lowest.mock.p95_seconds = 0.010;
  knee.mock.p95_seconds = 0.080;
  knee.p95_seconds = 0.200;
  Bottleneck b = find_bottleneck(knee, nullptr, &lowest);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::mock);
  CHECK(b.findings[0].value == Approx(8.0));
  // A mock 8x slower but still 2 % of the generator's p95 is not what limits the run.
  knee.p95_seconds = 4.0;
  CHECK(find_bottleneck(knee, nullptr, &lowest).findings.empty());
  // A mock that did not slow down does not count either.
  knee.p95_seconds = 0.1;
  knee.mock.p95_seconds = 0.012;
  CHECK(find_bottleneck(knee, nullptr, &lowest).findings.empty());
}

TEST_CASE("listen overflows count only when they rise over the step before") {
  PhaseStats before, at;
  before.host.listen_overflows = 50;
  at.host.listen_overflows = 50;
  CHECK(find_bottleneck(at, &before, nullptr).findings.empty());
  at.host.listen_overflows = 51;
  CHECK(find_bottleneck(at, &before, nullptr).findings.at(0).check == Check::listen_overflows);
  CHECK(find_bottleneck(at, nullptr, nullptr).findings.at(0).check == Check::listen_overflows);
}

TEST_CASE("TIME_WAIT near net.ipv4.tcp_max_tw_buckets counts as ports") {
  PhaseStats p;
  p.host.time_wait_max = 7000;
  p.host.time_wait_limit = 8192;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::ports);
  CHECK_THAT(b.findings[0].evidence, Catch::Contains("TIME_WAIT"));
  p.host.time_wait_max = 1000;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
}

TEST_CASE("a phase with no process, host or mock figures is not assessed") {
  PhaseStats p;
  p.users = 10;
  p.rps = 100;
  p.p95_seconds = 0.01;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  CHECK_FALSE(b.assessed);
  CHECK_THAT(b.summary, Catch::StartsWith("not assessed"));
}

TEST_CASE("check names round-trip") {
  for (Check c : {Check::target_cpu, Check::generator_cpu, Check::host_cpu, Check::throttling,
                  Check::memory, Check::iowait, Check::mock, Check::listen_overflows, Check::ports,
                  Check::fds, Check::softirq, Check::queueing}) {
    CHECK(check_from_name(check_name(c)) == c);
  }
  CHECK_FALSE(check_from_name("cpu"));
}

namespace {

/// A 2-core host where app and the generator use little and everyone else a lot.
PhaseStats busy_host() {
  PhaseStats p;
  p.users = 8;
  p.rps = 300;
  p.p50_seconds = 0.030;
  p.targets = {cpu_target("app", 0.6, 0.6), cpu_target("generator", 0.2, 0.2)};
  p.generator_target = "generator";
  p.host.cores = 2;
  p.host.cpu_busy_cores = 1.98;
  p.host.others_cpu_cores = 1.18;
  p.host.cpu_cores_by_mode = {{"user", 1.5}, {"system", 0.48}, {"idle", 0.02}};
  return p;
}

}  // namespace

TEST_CASE("a host CPU saturated by other processes is named, with who used it") {
  PhaseStats p = busy_host();
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::host_cpu);
  CHECK(b.findings[0].value == Approx(0.99));
  CHECK(b.summary ==
        "the host's CPU (host): 1.98 of 2 cores busy; used by others 1.18, app 0.60, "
        "generator 0.20");
  // Who the others are, by process name (the topcpu collector), busiest first.
  p.host.top_cpu_cores = {{"backup", 0.31}, {"app", 0.6}, {"hog", 0.85}};
  CHECK_THAT(find_bottleneck(p, nullptr, nullptr).summary,
             Catch::EndsWith("; busiest processes: hog 0.85, app 0.60, backup 0.31"));
  p.host.top_cpu_cores.clear();
  // Steal counts as used: another guest had the CPU.
  p.host.cpu_busy_cores = 1.6;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.host.cpu_cores_by_mode["steal"] = 0.3;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK_THAT(b.summary, Catch::Contains("1.90 of 2 cores busy (steal 0.30)"));
}

TEST_CASE("CPU pressure or a long run queue name the host CPU below 90 % busy") {
  PhaseStats p = busy_host();
  p.host.cpu_busy_cores = 1.2;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.host.cpu_pressure_ratio = 0.49;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.host.cpu_pressure_ratio = 0.6;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::host_cpu);
  CHECK(b.findings[0].threshold == kCpuPressureRatio);
  CHECK_THAT(b.summary, Catch::Contains("a task waited for a CPU 60 % of the time"));
  p.host.cpu_pressure_ratio = 0.1;
  p.host.run_queue_mean = 2.0;  // two runnable threads for two cores: no wait
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.host.run_queue_mean = 3.5;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].value == Approx(1.75));
  CHECK_THAT(b.summary, Catch::Contains("run queue 3.5 for 2 cores"));
}

TEST_CASE("on a mostly idle host, pressure and the run queue are a quota's, not the host's") {
  // Tasks a cgroup quota holds back wait in PSI and stay runnable: with 0.15 of 2 cores busy
  // they do not make the host's CPU the limit; the throttled target is named instead.
  PhaseStats p = busy_host();
  p.host.cpu_busy_cores = 0.15;
  p.host.cpu_pressure_ratio = 0.53;
  p.host.run_queue_mean = 2.4;
  TargetPhaseStats t = cpu_target("generator", 0.10, 0.10);
  t.cpu_limit_cores = 0.15;
  t.throttled_period_ratio = 0.8;
  p.targets = {t};
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].check == Check::throttling);
  for (const auto& f : b.findings) CHECK(f.check != Check::host_cpu);
  // Half the cores busy: the same pressure is the host's again.
  p.host.cpu_busy_cores = 1.0;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].check == Check::host_cpu);
}

TEST_CASE("niced work yields its CPU to targets at nice 0, not to niced targets") {
  // 2 cores busy, 1.4 of them niced (a build at nice 19): the targets could have had it.
  PhaseStats p = busy_host();
  p.host.cpu_busy_cores = 2.0;
  p.host.cpu_cores_by_mode = {{"user", 0.5}, {"nice", 1.4}, {"system", 0.1}};
  p.host.cpu_pressure_ratio = 0.9;  // the niced tasks wait too
  p.host.run_queue_mean = 4.0;
  for (auto& t : p.targets) t.nice = 0;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  CHECK(b.findings.empty());
  CHECK_THAT(b.summary, Catch::Contains("host CPU 2.00 of 2 cores busy, 1.40 of it niced work "
                                        "that yields"));
  CHECK_THAT(b.summary, Catch::Contains("(niced tasks' waits included)"));
  // Normal-priority work at 90 % of the cores saturates, niced work or not.
  p.host.cpu_cores_by_mode["nice"] = 0.2;
  p.host.cpu_cores_by_mode["user"] = 1.7;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].check == Check::host_cpu);
  CHECK(b.findings[0].value == Approx(0.9));
  // A little niced work leaves pressure and the run queue to judge as before.
  p.host.cpu_busy_cores = 1.3;
  p.host.cpu_cores_by_mode = {{"user", 1.2}, {"nice", 0.1}};
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].threshold == kCpuPressureRatio);
  // The targets run niced themselves: the niced work competes with them.
  p = busy_host();
  p.host.cpu_busy_cores = 2.0;
  p.host.cpu_cores_by_mode = {{"user", 0.5}, {"nice", 1.4}, {"system", 0.1}};
  p.targets[0].nice = 19;
  p.targets[1].nice = 0;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].check == Check::host_cpu);
  CHECK_THAT(b.summary, Catch::Contains("1.40 of it niced work that does not yield: app at nice "
                                        "19 too"));
  // Unknown nice values (older data): counted as busy, as before, and said so.
  for (auto& t : p.targets) t.nice.reset();
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE_FALSE(b.findings.empty());
  CHECK(b.findings[0].check == Check::host_cpu);
  CHECK_THAT(b.summary, Catch::Contains("counted as busy: the targets' nice value is unknown"));
}

TEST_CASE("a target whose quota keeps running out is throttled") {
  PhaseStats p;
  p.host.cores = 4;
  TargetPhaseStats t = cpu_target("app", 0.3, 0.3);
  t.cpu_limit_cores = 0.5;  // 60 %: under the CPU check's 90 %, yet bursts hit the quota
  t.throttled_period_ratio = 0.24;
  t.throttled_seconds_per_second = 0.4;
  p.targets = {t};
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.targets[0].throttled_period_ratio = 0.4;
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::throttling);
  CHECK(b.summary ==
        "the target's cgroup CPU quota (throttling) (app): its cgroup's CPU quota ran out in "
        "40 % of the periods (threshold 25 %) of 0.5 cores, held back 0.40 s a second");
}

TEST_CASE("memory pressure or swapping, then iowait") {
  PhaseStats p;
  p.host.cores = 2;
  p.host.memory_pressure_ratio = 0.05;
  p.host.swap_in_pages_per_second = 100;
  p.host.swap_out_pages_per_second = 100;
  CHECK(find_bottleneck(p, nullptr, nullptr).findings.empty());
  p.host.swap_out_pages_per_second = 200;  // 300 pages/s
  Bottleneck b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::memory);
  CHECK_THAT(b.summary, Catch::Contains("100 pages/s swapped in, 200 out"));
  p.host.swap_out_pages_per_second = 0;
  p.host.memory_pressure_ratio = 0.15;
  p.host.memory_stall_ratio = 0.05;
  b = find_bottleneck(p, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK_THAT(b.summary, Catch::Contains("a task stalled on memory 15 % of the time"));
  CHECK_THAT(b.summary, Catch::Contains("every task at once 5 %"));

  PhaseStats io;
  io.host.cores = 2;
  io.host.cpu_cores_by_mode = {{"iowait", 0.3}};
  CHECK(find_bottleneck(io, nullptr, nullptr).findings.empty());  // 15 %
  io.host.cpu_cores_by_mode["iowait"] = 0.5;
  b = find_bottleneck(io, nullptr, nullptr);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::iowait);
  CHECK_THAT(b.summary, Catch::Contains("iowait 0.50 of 2 cores (25 %"));
  io.host.cpu_cores_by_mode["iowait"] = 0.1;
  io.host.io_pressure_ratio = 0.3;
  CHECK(find_bottleneck(io, nullptr, nullptr).findings.at(0).check == Check::iowait);
}

TEST_CASE("a flat throughput with rising latency and idle CPU is a queueing limit of K") {
  // K = 4 slots of 20 ms: 200 req/s at most. One user sees 20 ms; at 16 users the plateau is
  // 200 req/s and each request waits for the 15 ahead of it (80 ms).
  PhaseStats lowest, at;
  lowest.users = 1;
  lowest.rps = 50;
  lowest.p50_seconds = 0.020;
  at.users = 16;
  at.rps = 200;
  at.p50_seconds = 0.080;
  for (PhaseStats* p : {&lowest, &at}) {
    p->targets = {cpu_target("app", 0.1, 0.1)};
    p->host.cores = 2;
    p->host.cpu_busy_cores = 0.3;
  }
  Bottleneck b = find_bottleneck(at, &lowest, &lowest);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::queueing);
  CHECK(b.findings[0].subject == "app");
  CHECK(b.findings[0].value == Approx(4.0));
  CHECK(b.findings[0].value_low == Approx(4.0));  // exact inputs: K has no spread
  CHECK(b.findings[0].value_high == Approx(4.0));
  CHECK(b.summary ==
        "a queueing limit with idle CPU (app): ≈ 4.0 requests in service at once (200.0 req/s at "
        "the highest load x 20.0 ms, the median latency at the lowest load at 1 users); ≈ 16.0 in "
        "flight at 16 users (x 80.0 ms, 4.0 x higher): a pool, a lock or a connection limit of "
        "about 4, with the host CPU 0.30 of 2 cores busy");
  CHECK_THAT(b.summary, Catch::Contains("a pool, a lock or a connection limit of about 4"));
  CHECK_THAT(b.summary, !Catch::Contains("database"));

  // A coarse rate (+-20 %) and the latency's bucket (19.5-20.6 ms) give K a range.
  at.rps_low = 160;
  at.rps_high = 240;
  lowest.p50_low_seconds = 0.0195;
  lowest.p50_high_seconds = 0.0206;
  b = find_bottleneck(at, &lowest, &lowest);
  CHECK(b.findings.at(0).value == Approx(4.0));
  CHECK_THAT(b.summary, Catch::Contains("a pool, a lock or a connection limit of about 4 (3.1 to "
                                        "4.9 from the bounds of the req/s and the latency)"));
  CHECK(b.findings.at(0).value_low == Approx(160 * 0.0195));
  CHECK(b.findings.at(0).value_high == Approx(240 * 0.0206));
  at.rps_low.reset();
  at.rps_high.reset();
  lowest.p50_low_seconds.reset();
  lowest.p50_high_seconds.reset();

  // Latency that did not grow: no queue formed; what it cannot see is said as that.
  at.p50_seconds = 0.025;
  b = find_bottleneck(at, &lowest, &lowest);
  CHECK(b.findings.empty());
  CHECK_THAT(b.summary, Catch::StartsWith("no limit loadwatch can see: targets' CPU below their "
                                          "limits (app 0.10 of 2 cores), host CPU 0.30 of 2 "
                                          "cores busy; latency 1.2 x its lowest-load value"));

  // The knee at K users, before any queue formed: the highest load above it shows the queue.
  at.p50_seconds = 0.080;
  PhaseStats knee = at;
  knee.users = 4;
  knee.rps = 190;
  knee.p50_seconds = 0.021;
  b = find_bottleneck(knee, &lowest, &lowest, &at);
  REQUIRE(b.findings.size() == 1);
  CHECK(b.findings[0].check == Check::queueing);
  CHECK(b.findings[0].value == Approx(4.0));
  // Latency at the knee does not count when the highest load shows no queue.
  PhaseStats calm = at;
  calm.p50_seconds = 0.022;
  CHECK(find_bottleneck(at, &lowest, &lowest, &calm).findings.empty());

  // A saturated host CPU is named before any queue.
  at.host.cpu_busy_cores = 1.9;
  CHECK(find_bottleneck(at, &lowest, &lowest).findings.at(0).check == Check::host_cpu);
}
