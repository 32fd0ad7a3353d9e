#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/phase_summary.h"

using namespace loadwatch::analysis;

namespace {

constexpr double kT0 = 1700000000;

/// One point per second over [from, to], value f(seconds since kT0).
template <typename F>
Series per_second(double from, double to, F f) {
  Series s;
  for (double t = from; t <= to; t += 1) s.add(kT0 + t, f(t));
  return s;
}

}  // namespace

TEST_CASE("window reductions over per-sample series") {
  Series s = per_second(0, 9, [](double t) { return t; });  // 0..9
  CHECK(*mean_in(s, kT0 + 2, kT0 + 4) == Approx(3));
  CHECK(*max_in(s, kT0, kT0 + 100) == 9);
  CHECK(*min_in(s, kT0 + 5, kT0 + 100) == 5);
  CHECK(*median_in(s, kT0 + 1, kT0 + 4) == Approx(2.5));
  CHECK(*median_in(s, kT0 + 1, kT0 + 3) == Approx(2));
  CHECK(*first_in(s, kT0 + 3.5, kT0 + 8) == 4);
  CHECK(*last_in(s, kT0 + 3.5, kT0 + 8) == 8);
  CHECK(*slope_in(s, kT0, kT0 + 9) == Approx(1));
  CHECK_FALSE(mean_in(s, kT0 + 20, kT0 + 30));
  CHECK_FALSE(slope_in(s, kT0 + 3, kT0 + 3));
  CHECK_FALSE(increase_in(s, kT0 + 3, kT0 + 3));
}

TEST_CASE("a counter's increase counts a reset as a restart from zero") {
  Series c;
  for (double v : {100.0, 110.0, 120.0, 5.0, 15.0}) c.add(kT0 + c.t.size(), v);
  // 10 + 10 + 5 (restart at 0 -> 5) + 10
  CHECK(*increase_in(c, kT0, kT0 + 4) == Approx(35));
  CHECK(*rate_in(c, kT0, kT0 + 4) == Approx(35.0 / 4));
}

TEST_CASE("a counter per second: the rate of each interval, a restart left out") {
  Series c;
  c.add(kT0, 100);
  c.add(kT0 + 2, 110);  // 5/s over two seconds
  c.add(kT0 + 3, 4);    // restart: no rate for this interval
  c.add(kT0 + 4, 7);
  c.add(kT0 + 4, 9);  // no time between: no rate
  Series r = per_second(c);
  CHECK(r.t == std::vector<double>{kT0 + 2, kT0 + 4});
  CHECK(r.v == std::vector<double>{5, 3});
  CHECK(per_second(Series{}).empty());
}

TEST_CASE("the warm-up rule: 20 % of the phase, at least 30 s, at most half") {
  WarmupRule rule;
  CHECK(rule.warmup_seconds(300) == Approx(60));  // 20 %
  CHECK(rule.warmup_seconds(100) == Approx(30));  // the 30 s floor
  CHECK(rule.warmup_seconds(40) == Approx(20));   // never more than half
  CHECK(rule.warmup_seconds(0) == 0);
  CHECK(rule.describe() == "first 20% of the phase, at least 30 s, at most 50%");
}

TEST_CASE("a phase is summarised from the run's series with the documented windows") {
  // Phase [100, 400]: warm-up 60 s, stable window [160, 400].
  RunSeries run;
  GeneratorSeries& g = run.generator;
  // 50 req/s during warm-up, then 100 req/s; 1 failure per second after warm-up.
  g.requests =
      per_second(0, 500, [](double t) { return t <= 160 ? 50 * t : 8000 + 100 * (t - 160); });
  g.failures = per_second(0, 500, [](double t) { return t <= 160 ? 0 : t - 160; });
  g.p95_seconds = per_second(0, 500, [](double t) { return t < 160 ? 0.5 : 0.040; });
  g.p50_seconds = per_second(0, 500, [](double) { return 0.010; });

  TargetSeries app;
  app.name = "app";
  app.cpu_seconds = per_second(0, 500, [](double t) { return 1.5 * t; });
  app.busiest_process_cores = per_second(0, 500, [](double) { return 0.96; });
  app.rss_bytes = per_second(0, 500, [](double t) { return 100e6 + 1000 * t; });
  app.open_fds =
      per_second(0, 500, [](double t) { return t == 120 ? 900 : 100; });  // peak in warm-up
  app.max_fds = per_second(0, 500, [](double) { return 1024; });
  app.cpu_limit_cores = 2;
  TargetSeries gen;
  gen.name = "locust";
  gen.cpu_seconds = per_second(0, 500, [](double t) { return 0.3 * t; });
  run.targets = {app, gen};
  run.generator_target = "locust";

  HostSeries& h = run.host;
  h.cores = 2;
  h.cpu_seconds_by_mode["user"] = per_second(0, 500, [](double t) { return 1.0 * t; });
  h.cpu_seconds_by_mode["softirq"] = per_second(0, 500, [](double t) { return 0.2 * t; });
  h.time_wait = per_second(0, 500, [](double t) { return t; });
  h.time_wait_limit = 8192;
  h.listen_overflows = per_second(0, 500, [](double t) { return t < 150 ? 0 : 7; });
  h.ephemeral_port_ratio = per_second(0, 500, [](double t) { return t / 1000; });
  run.mock.requests = per_second(0, 500, [](double t) { return 10 * t; });
  run.mock.errors = per_second(0, 500, [](double t) { return 0.1 * t; });
  run.mock.p95_seconds = per_second(0, 500, [](double) { return 0.002; });

  PhaseStats p = summarize_phase({"step 2", 100, kT0 + 100, kT0 + 400}, run);
  CHECK(p.name == "step 2");
  CHECK(*p.users == 100);
  CHECK(*p.duration_seconds == 300);
  CHECK(*p.stable_start == kT0 + 160);
  CHECK(*p.stable_seconds == 240);
  CHECK_THAT(p.warmup_rule, Catch::Contains("20%"));
  CHECK(*p.rps == Approx(100));            // the warm-up's 50 req/s is dropped
  CHECK(*p.p95_seconds == Approx(0.040));  // ... and its slow p95
  CHECK(*p.p50_seconds == Approx(0.010));
  CHECK(p.latency_method == "generator");
  // A figure that did not move over the stable window has no range; one that did has it as
  // its bound.
  CHECK_FALSE(p.p95_low_seconds);
  {
    RunSeries moving = run;
    moving.generator.p95_seconds = per_second(0, 500, [](double t) {
      return t < 300 ? 0.040 : t < 350 ? 0.050 : 0.045;
    });
    PhaseStats m = summarize_phase({"step", 10, kT0 + 100, kT0 + 400}, moving);
    CHECK(*m.p95_low_seconds == Approx(0.040));
    CHECK(*m.p95_high_seconds == Approx(0.050));
    CHECK(*m.p95_seconds >= *m.p95_low_seconds);
    CHECK(*m.p95_seconds <= *m.p95_high_seconds);
  }
  CHECK_FALSE(p.p99_seconds);  // not reported: not invented
  CHECK(*p.error_ratio == Approx(0.01));

  const TargetPhaseStats* t = p.target("app");
  REQUIRE(t);
  CHECK(*t->cpu_cores == Approx(1.5));
  CHECK(*t->busiest_process_core_share == Approx(0.96));
  CHECK(*t->cpu_limit_cores == 2);
  CHECK(*t->rss_start_bytes == Approx(100e6 + 100e3));
  CHECK(*t->rss_end_bytes == Approx(100e6 + 400e3));
  CHECK(*t->rss_slope_bytes_per_second == Approx(1000));
  CHECK(*t->open_fds_max == 900);  // peaks count over the whole phase
  CHECK(*t->fd_limit == 1024);
  CHECK(*p.generator_target == "locust");
  CHECK(*p.target("locust")->cpu_cores == Approx(0.3));
  CHECK_FALSE(p.target("locust")->rss_start_bytes);

  CHECK(*p.host.cores == 2);
  CHECK(p.host.cpu_cores_by_mode.at("user") == Approx(1.0));
  CHECK(p.host.cpu_cores_by_mode.count("softirq") == 0);  // softirq apart
  CHECK(*p.host.softirq_cores == Approx(0.2));
  CHECK(*p.host.time_wait_max == 400);
  CHECK(*p.host.time_wait_limit == 8192);
  CHECK(*p.host.listen_overflows == 7);
  CHECK(*p.host.ephemeral_port_ratio_max == Approx(0.4));
  CHECK(*p.mock.p95_seconds == Approx(0.002));
  CHECK(*p.mock.error_ratio == Approx(0.01));
}

TEST_CASE("a rate whose window spans a step of loadwatch's wall clock is not given") {
  // 100 req/s, one sample a second; the wall clock is set 20 s ahead after the sample at
  // real second `step_at`: every later sample is stamped 20 s late, and the step counter rises.
  auto run_with_step = [](double step_at) {
    RunSeries run;
    for (double real = 0; real <= 500; real += 1) {
      double stamped = kT0 + real + (real > step_at ? 20 : 0);
      run.generator.requests.add(stamped, 100 * real);
      run.generator.clock_steps.add(stamped, real > step_at ? 1 : 0);
    }
    return run;
  };
  // Phase [100, 420] on the wall clock: stable window [164, 420].
  PhaseStats inside = summarize_phase({"s", 10, kT0 + 100, kT0 + 420}, run_with_step(250));
  CHECK_FALSE(inside.rps);  // 100 * 236 requests over 256 s would read 92 req/s
  CHECK_FALSE(inside.rps_low);
  CHECK_THAT(inside.rps_unavailable, Catch::Contains("wall clock was set 1 time(s)"));
  // A step before the window leaves the rate alone.
  PhaseStats before = summarize_phase({"s", 10, kT0 + 100, kT0 + 420}, run_with_step(20));
  REQUIRE(before.rps);
  CHECK(*before.rps == Approx(100));
  CHECK(before.rps_unavailable.empty());
}

TEST_CASE("a phase counts the seconds in which loadwatch took no sample") {
  RunSeries run;
  // One sample a second, but none from 230 to 247: the counter rises by 17 at 247.
  for (double t = 0; t <= 500; t += 1) {
    if (t > 230 && t < 247) continue;
    run.host.sample_gap_seconds.add(kT0 + t, t >= 247 ? 17 : 0);
  }
  PhaseStats during = summarize_phase({"s", 10, kT0 + 100, kT0 + 400}, run);
  CHECK(*during.host.sample_gap_seconds == Approx(17));
  // A phase that began while loadwatch was stopped: the part of the gap after its start.
  PhaseStats began_inside = summarize_phase({"s", 10, kT0 + 235, kT0 + 400}, run);
  CHECK(*began_inside.host.sample_gap_seconds == Approx(12));
  PhaseStats before = summarize_phase({"s", 10, kT0 + 100, kT0 + 200}, run);
  CHECK(*before.host.sample_gap_seconds == 0);
  PhaseStats after = summarize_phase({"s", 10, kT0 + 400, kT0 + 500}, run);
  CHECK(*after.host.sample_gap_seconds == 0);
  PhaseStats unknown = summarize_phase({"s", 10, kT0 + 100, kT0 + 400}, RunSeries{});
  CHECK_FALSE(unknown.host.sample_gap_seconds);
}

TEST_CASE("a run with no series gives a phase of unknowns, not zeros") {
  PhaseStats p = summarize_phase({"idle", std::nullopt, kT0, kT0 + 60}, RunSeries{});
  CHECK_FALSE(p.rps);
  CHECK_FALSE(p.error_ratio);
  CHECK(p.targets.empty());
  CHECK(p.host == HostPhaseStats{});
  CHECK_FALSE(p.generator_target);
}

TEST_CASE("without a request counter, the generator's own RPS gauge is averaged") {
  RunSeries run;
  run.generator.rps = per_second(0, 100, [](double t) { return t < 30 ? 0 : 42; });
  PhaseStats p = summarize_phase({"s", 10, kT0, kT0 + 100}, run);
  CHECK(*p.rps == Approx(42));
}

TEST_CASE("a run's report from its series: phases summarised, then analysed") {
  // Six 2-minute steps of 10 users against a server that saturates at 30 users.
  RunSeries run;
  double requests = 0;
  for (double t = 0; t < 720; t += 1) {
    double users = 10 * (1 + std::floor(t / 120));
    requests += 20 * std::min(users, 30.0);
    run.generator.requests.add(kT0 + t, requests);
    run.generator.p95_seconds.add(kT0 + t, 0.05 * std::max(1.0, users / 30));
  }
  std::vector<PhaseWindow> windows;
  for (int i = 0; i < 6; ++i) {
    windows.push_back(
        {"step " + std::to_string(i + 1), 10 * (i + 1), kT0 + 120 * i, kT0 + 120 * i + 119});
  }
  CapacityReport r =
      report_from_series(RunInfo{"r1", "checkout", {}, kT0, kT0 + 720, "finished"}, windows, run);
  REQUIRE(r.phases.size() == 6);
  CHECK(*r.phases[2].rps == Approx(600));
  REQUIRE(r.knee.phase);
  CHECK(r.knee.phase->name == "step 3");
  REQUIRE(r.latency_knee.phase);
  CHECK(r.latency_knee.phase->name == "step 4");  // 40 users: p95 +33 % over the flat start
  CHECK(r.run->name == "checkout");
}

TEST_CASE("the host's busy CPU, who used it, the run queue, pressure, swap and throttling") {
  // 2 cores over 60 s: user 1.5 cores, system 0.3, softirq 0.1, steal 0.05, iowait 0.05, the
  // rest idle. The app used 0.6 cores and the generator 0.2: everyone else 1.9 - 0.8 = 1.1.
  RunSeries rs;
  rs.host.cores = 2;
  auto counter = [](double per_second_value) {
    return per_second(0, 60, [=](double t) { return 1000 + per_second_value * t; });
  };
  rs.host.cpu_seconds_by_mode = {{"user", counter(1.5)},    {"system", counter(0.3)},
                                 {"softirq", counter(0.1)}, {"steal", counter(0.05)},
                                 {"iowait", counter(0.05)}, {"idle", counter(0.0)}};
  rs.host.procs_running = per_second(0, 60, [](double t) { return t < 30 ? 9 : 3; });
  rs.host.cpu_pressure_waiting = counter(0.4);
  rs.host.memory_pressure_waiting = counter(0.02);
  rs.host.memory_pressure_stalled = counter(0.01);
  rs.host.io_pressure_waiting = counter(0.03);
  rs.host.io_pressure_stalled = counter(0.0);
  rs.host.swap_in_pages = counter(10);
  rs.host.swap_out_pages = counter(20);
  TargetSeries app;
  app.name = "app";
  app.cpu_seconds = counter(0.6);
  app.cpu_periods = counter(10);  // 100 ms periods
  app.cpu_throttled_periods = counter(4);
  app.cpu_throttled_seconds = counter(0.3);
  TargetSeries gen;
  gen.name = "generator";
  gen.cpu_seconds = counter(0.2);
  rs.targets = {app, gen};
  // The busiest names: "hog" at 1 core throughout; "make" at 0.5 in one sample of the stable
  // window's 31 and absent from the others (below the five exported).
  rs.host.top_cpu_cores["hog"] = per_second(0, 60, [](double) { return 1.0; });
  rs.host.top_cpu_cores["make"].add(kT0 + 45, 0.5 * 31);
  rs.host.top_cpu_cores["early"].add(kT0 + 10, 1.0);  // before the stable window

  PhaseStats p = summarize_phase({"8", 8, kT0, kT0 + 60}, rs);  // stable: the last 30 s
  const HostPhaseStats& h = p.host;
  CHECK(*h.cpu_busy_cores == Approx(1.9));  // user + system + softirq; not steal, not iowait
  CHECK(*h.others_cpu_cores == Approx(1.1));
  CHECK(*h.run_queue_mean == Approx(3));  // the stable window only
  CHECK(*h.cpu_pressure_ratio == Approx(0.4));
  CHECK(*h.memory_pressure_ratio == Approx(0.02));
  CHECK(*h.memory_stall_ratio == Approx(0.01));
  CHECK(*h.io_pressure_ratio == Approx(0.03));
  CHECK(*h.io_stall_ratio == Approx(0.0));
  CHECK(*h.swap_in_pages_per_second == Approx(10));
  CHECK(*h.swap_out_pages_per_second == Approx(20));
  CHECK(h.top_cpu_cores.size() == 2);
  CHECK(h.top_cpu_cores.at("hog") == Approx(1.0));
  CHECK(h.top_cpu_cores.at("make") == Approx(0.5));
  REQUIRE(p.target("app"));
  CHECK(*p.target("app")->throttled_period_ratio == Approx(0.4));
  CHECK(*p.target("app")->throttled_seconds_per_second == Approx(0.3));
  CHECK_FALSE(p.target("generator")->throttled_period_ratio);  // no quota: unknown, not 0
  // The report's JSON carries every new figure and reads them back.
  nlohmann::ordered_json j = p;
  CHECK(nlohmann::json::parse(j.dump()).get<PhaseStats>() == p);
  CHECK(j["host"]["others_cpu_cores"].get<double>() == Approx(1.1));

  // A target whose CPU is unknown makes "everyone else" unknown rather than too large.
  rs.targets[1].cpu_seconds = Series{};
  CHECK_FALSE(summarize_phase({"8", 8, kT0, kT0 + 60}, rs).host.others_cpu_cores);
  // No data at all: every new figure stays absent.
  PhaseStats empty = summarize_phase({"8", 8, kT0, kT0 + 60}, RunSeries{});
  CHECK_FALSE(empty.host.cpu_busy_cores);
  CHECK_FALSE(empty.host.cpu_pressure_ratio);
  CHECK_FALSE(empty.host.run_queue_mean);
  CHECK_FALSE(empty.host.swap_in_pages_per_second);
  CHECK(empty.host.top_cpu_cores.empty());
}
