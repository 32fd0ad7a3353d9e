// One run across hosts: roles from what each host's loadwatch watches, the fleet's figures per
// phase (throughput summed, quantiles never averaged), every host judged at one phase, and the
// warnings (clock skew, uneven load).
#include <catch2/catch.hpp>
#include <cmath>

#include "analysis/fleet_report.h"

using namespace loadwatch::analysis;

namespace {

PhaseStats phase(int users) {
  PhaseStats p;
  p.name = "users=" + std::to_string(users);
  p.users = users;
  p.start = 1000.0 + 60 * users;
  p.end = p.start.value() + 60;
  return p;
}

FleetHost host(const std::string& name, double skew) {
  FleetHost h;
  h.name = name;
  h.url = "http://" + name + ":9797";
  h.skew_seconds = skew;
  h.skew_uncertainty = 0.002;
  return h;
}

/// A generator host whose throughput rises by `per_user` up to `cap`.
FleetHost generator(const std::string& name, double per_user, double cap) {
  FleetHost h = host(name, 0.01);
  for (int u : {10, 20, 30, 40, 50}) {
    PhaseStats p = phase(u);
    p.rps = std::min(cap, per_user * u);
    p.rps_low = *p.rps - 1;
    p.rps_high = *p.rps + 1;
    p.rps_method = "counter";
    p.p95_seconds = 0.01 * u;
    p.error_ratio = name == "gen-1" ? 0.0 : 0.1;
    p.host.cores = 2;
    p.host.cpu_busy_cores = u >= 30 ? 1.97 : 0.05 * u;  // busy from the knee on
    h.report.phases.push_back(p);
  }
  return h;
}

FleetHost target_host(const std::string& name, double cores_per_user) {
  FleetHost h = host(name, -0.02);
  for (int u : {10, 20, 30, 40, 50}) {
    PhaseStats p = phase(u);
    TargetPhaseStats t;
    t.name = "app";
    t.cpu_cores = cores_per_user * u;
    p.targets.push_back(t);
    p.host.cores = 8;
    p.host.cpu_busy_cores = cores_per_user * u;
    h.report.phases.push_back(p);
  }
  return h;
}

}  // namespace

TEST_CASE("roles come from what each loadwatch watches") {
  CHECK(infer_role(generator("g", 10, 100).report) == HostRole::generator);
  CHECK(infer_role(target_host("s", 0.01).report) == HostRole::target);
  CapacityReport mock;
  mock.phases.push_back(phase(1));
  mock.phases[0].mock.p95_seconds = 0.002;
  CHECK(infer_role(mock) == HostRole::mock);
  CHECK(infer_role(CapacityReport{}) == HostRole::unknown);
}

TEST_CASE("the fleet sums throughput, weighs errors, and never averages quantiles") {
  auto r = build_fleet_report(
      {generator("gen-1", 10, 300), generator("gen-2", 10, 300), target_host("sut-1", 0.01)});
  REQUIRE(r.fleet.phases.size() == 5);
  const PhaseStats& p = r.fleet.phases[1];
  CHECK(p.rps == Approx(400));
  CHECK(p.rps_low == Approx(398));
  CHECK(p.rps_high == Approx(402));
  CHECK(p.error_ratio == Approx(0.05));  // 0 % of 200 req/s and 10 % of 200
  CHECK_FALSE(p.p95_seconds);
  CHECK_THAT(p.latency_window, Catch::Contains("never averaged"));
  REQUIRE(p.targets.size() == 1);
  CHECK(p.targets[0].name == "sut-1/app");
  // One generator host: its quantiles stand as they are.
  auto one = build_fleet_report({generator("gen-1", 10, 300), target_host("sut-1", 0.01)});
  CHECK(one.fleet.phases[1].p95_seconds == Approx(0.2));
}

TEST_CASE("several generators' latency is their histograms summed by bucket") {
  // gen-1: 90 requests at <= 10 ms; gen-2: 10 requests in (10, 100] ms. The fleet's p95 lies
  // in gen-2's bucket, though gen-1's own p95 is 10 ms at most: no average of the two.
  auto gen1 = generator("gen-1", 10, 300), gen2 = generator("gen-2", 10, 300);
  gen1.phase_histograms.assign(5, {{0.01, 90}, {0.1, 90}, {INFINITY, 90}});
  gen2.phase_histograms.assign(5, {{0.01, 0}, {0.1, 10}, {INFINITY, 10}});
  gen1.histogram_window = gen2.histogram_window = "between the window's edges";
  auto r = build_fleet_report({gen1, gen2, target_host("sut-1", 0.01)});
  const PhaseStats& p = r.fleet.phases[1];
  CHECK(p.latency_method == "histogram");
  CHECK(p.p95_low_seconds == Approx(0.01));
  CHECK(p.p95_high_seconds == Approx(0.1));
  CHECK(p.p95_seconds == Approx(0.01 + 0.09 * 0.5));  // rank 95 of 100: half into the bucket
  CHECK(p.p50_high_seconds == Approx(0.01));
  CHECK_THAT(p.latency_window,
             Catch::Contains("summed by bucket") && Catch::Contains("between the window's edges"));
  // One host's histogram missing: none, and which host and why.
  gen2.phase_histograms.clear();
  gen2.histogram_unavailable = "no buckets here";
  auto missing = build_fleet_report({gen1, gen2});
  CHECK_FALSE(missing.fleet.phases[1].p95_seconds);
  CHECK_THAT(missing.fleet.phases[1].latency_window,
             Catch::Contains("a histogram is missing (gen-2: no buckets here)"));
  // Each host that lacks one is named with its own reason, a phase's own before the host's.
  gen1.phase_histogram_unavailable.assign(5, "");
  gen1.phase_histogram_unavailable[1] = "the history no longer reaches back so far";
  gen1.phase_histograms[1].clear();
  auto both = build_fleet_report({gen1, gen2});
  CHECK_FALSE(both.fleet.phases[1].p95_seconds);
  CHECK_THAT(both.fleet.phases[1].latency_window,
             Catch::Contains("(gen-1: the history no longer reaches back so far; gen-2: no "
                             "buckets here)"));
  gen1.phase_histograms[1] = gen1.phase_histograms[0];
  // Other bucket edges cannot be summed.
  gen2.phase_histograms.assign(5, {{0.02, 0}, {0.1, 10}, {INFINITY, 10}});
  auto edges = build_fleet_report({gen1, gen2});
  CHECK_FALSE(edges.fleet.phases[1].p95_seconds);
  CHECK_THAT(edges.fleet.phases[1].latency_window, Catch::Contains("other buckets"));
}

TEST_CASE("a generator without throughput leaves the sum out, with its reason") {
  auto gen2 = generator("gen-2", 10, 300);
  gen2.report.phases[2].rps.reset();
  gen2.report.phases[2].rps_unavailable = "1 counter update in 7 s";
  auto r = build_fleet_report({generator("gen-1", 10, 300), gen2});
  CHECK_FALSE(r.fleet.phases[2].rps);
  CHECK(r.fleet.phases[2].rps_unavailable == "gen-2: 1 counter update in 7 s");
}

TEST_CASE("every host is judged at the fleet's knee; the verdict names the host") {
  // gen-2's throughput flattens at 30 users: the fleet's knee; its CPU is at 1.97 of 2 cores.
  auto r = build_fleet_report({target_host("sut-1", 0.01), generator("gen-2", 10, 300)});
  REQUIRE(r.fleet.knee.phase);
  REQUIRE(r.verdicts.size() == 2);
  CHECK(r.verdicts[0].phase == r.verdicts[1].phase);
  CHECK(r.verdicts[0].result.findings.empty());
  REQUIRE_FALSE(r.verdicts[1].result.findings.empty());
  CHECK(r.verdicts[1].result.findings[0].check == Check::host_cpu);
  CHECK_THAT(r.summary, Catch::Contains("gen-2 (generator host)"));
  CHECK_THAT(r.summary, Catch::Contains("of 2 cores"));
}

TEST_CASE("clock skew and uneven load are warnings") {
  auto far = target_host("sut-2", 0.004);
  far.skew_seconds = 1.5;
  auto r = build_fleet_report({generator("gen-1", 10, 1000), target_host("sut-1", 0.01), far});
  auto has = [&](const std::string& text) {
    for (const auto& w : r.warnings) {
      if (w.find(text) != std::string::npos) return true;
    }
    return false;
  };
  CHECK(has("sut-2's clock is 1.5 s off"));
  CHECK(has("sut-1's app"));
  CHECK(has("spread unevenly"));
  // A skew within its uncertainty of the bound is no warning.
  auto near = target_host("sut-3", 0.01);
  near.skew_seconds = 0.5015;
  near.skew_uncertainty = 0.002;
  auto quiet = build_fleet_report({generator("gen-1", 10, 1000), near});
  for (const auto& w : quiet.warnings) CHECK(w.find("clock") == std::string::npos);
}

TEST_CASE("phases are matched by name and instant, not by index") {
  // Prometheus scraped none of sut-1's short second phase: its later phases stay matched.
  auto sut = target_host("sut-1", 0.01);
  sut.report.phases.erase(sut.report.phases.begin() + 1);
  auto r = build_fleet_report({generator("gen-1", 10, 1000), sut});
  REQUIRE(r.fleet.phases.size() == 4);
  CHECK(r.fleet.phases[1].name == "users=30");
  REQUIRE(r.fleet.phases[1].targets.size() == 1);
  CHECK(r.fleet.phases[1].targets[0].cpu_cores == Approx(0.3));  // sut-1's users=30, not 40
  CHECK(r.host_phase[1] == std::vector<std::size_t>{0, 1, 2, 3});
  bool warned = false;
  for (const auto& w : r.warnings) warned |= w.find("users=20 (not on sut-1)") != std::string::npos;
  CHECK(warned);
  // A name given twice (a step down and up again) is matched by its start.
  auto gen = generator("gen-1", 10, 1000);
  auto other = target_host("sut-1", 0.01);
  for (auto* h : {&gen, &other}) {
    for (auto& p : h->report.phases) p.name = "steady";
  }
  other.report.phases.erase(other.report.phases.begin());
  auto same = build_fleet_report({gen, other});
  REQUIRE(same.fleet.phases.size() == 4);
  CHECK(same.host_phase[0] == std::vector<std::size_t>{1, 2, 3, 4});
}

TEST_CASE("without a knee every host is judged at the highest load, rate or not") {
  // The generator's own quota starves it from 30 users on: too few counter updates for a rate
  // there. Judged at 50 users, not at 20 (the highest load with a rate), where it still kept up.
  auto gen = generator("gen-1", 10, 1000);
  for (std::size_t k = 2; k < gen.report.phases.size(); ++k) {
    gen.report.phases[k].rps.reset();
    gen.report.phases[k].rps_unavailable = "1 counter update in 5 s";
  }
  auto r = build_fleet_report({target_host("sut-1", 0.001), gen});
  CHECK_FALSE(r.fleet.knee.phase);
  REQUIRE(r.verdicts[1].phase);
  CHECK(*r.verdicts[1].phase == 4);
  CHECK_THAT(r.summary, Catch::Contains("users=50"));
  // A stub step opened as the generator quit (2 s of 60) is no load to judge at.
  PhaseStats stub = phase(60);
  stub.end = *stub.start + 2;
  auto sut = target_host("sut-1", 0.001);
  gen.report.phases.push_back(stub);
  sut.report.phases.push_back(stub);
  auto with_stub = build_fleet_report({sut, gen});
  REQUIRE(with_stub.verdicts[1].phase);
  CHECK(*with_stub.verdicts[1].phase == 4);
}

TEST_CASE("a process at its quota outranks a host CPU busy with others' work") {
  // Both hosts share one busy machine (others use most of it); sut-1's app is throttled by its
  // quota. The app is the test's limit, not the machine.
  auto busy = [](FleetHost h) {
    for (auto& p : h.report.phases) {
      p.host.cores = 2;
      p.host.cpu_busy_cores = 1.98;
      p.host.others_cpu_cores = 1.85;
    }
    return h;
  };
  auto sut = busy(target_host("sut-1", 0.001));
  for (auto& p : sut.report.phases) {
    p.targets[0].throttled_period_ratio = 0.9;
    p.targets[0].cpu_limit_cores = 0.1;
  }
  auto r = build_fleet_report({busy(generator("gen-1", 10, 1000)), sut});
  CHECK_THAT(r.summary, Catch::Contains("sut-1 (target host): the target's cgroup CPU quota"));
  // The host's CPU used by the test's own processes still comes first.
  auto own = busy(generator("gen-1", 10, 1000));
  for (auto& p : own.report.phases) p.host.others_cpu_cores = 0.2;
  auto r2 = build_fleet_report({own, sut});
  CHECK_THAT(r2.summary, Catch::Contains("gen-1 (generator host): the host's CPU"));
}
