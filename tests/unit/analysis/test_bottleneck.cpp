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
  p.host.cores = 4;
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

TEST_CASE("the checks run in the documented order and the first finding is the verdict") {
  PhaseStats p = everything_saturated();
  PhaseStats before = p;
  before.host.listen_overflows = 0;
  Bottleneck b = find_bottleneck(p, &before, &before);
  REQUIRE(b.assessed);
  CHECK(checks_of(b) == std::vector<Check>{Check::target_cpu, Check::generator_cpu, Check::mock,
                                           Check::listen_overflows, Check::ports, Check::fds,
                                           Check::softirq});
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
  CHECK_THAT(none.summary, Catch::StartsWith("nothing loadwatch sees saturated"));
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
  for (Check c : {Check::target_cpu, Check::generator_cpu, Check::mock, Check::listen_overflows,
                  Check::ports, Check::fds, Check::softirq}) {
    CHECK(check_from_name(check_name(c)) == c);
  }
  CHECK_FALSE(check_from_name("cpu"));
}
