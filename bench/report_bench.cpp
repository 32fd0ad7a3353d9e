// report_bench — the capacity report over 2 hours of per-second history (target: <= 50 ms).
//
// Builds a RunSeries shaped like the daemon's history after a 2-hour step-load run: one point
// per second for 10 targets (CPU, busiest process, RSS, fds, fd limit), the host (8 CPU modes,
// TIME_WAIT, listen overflows, ephemeral ports), the generator (requests, failures, p50/p95/p99)
// and a mock (requests, errors, p95): ~85 series of 7,200 points. Then, on one thread, times what
// GET /runs/{id}/report does after reading the history: 10 phases summarised, the analysis
// (Kneedle, latency knee, USL fit, bottleneck), and the report rendered as table, markdown and
// JSON. CPU time, not wall time: the machine is shared.
//
// Usage: report_bench [--iterations 20] [--phases 10] [--hours 2] [--targets 10]
// Output, one key=value line (for bench/run):
//   report points=612000 phases=10 iterations=20 ms_per_report=3.1 ms_summarize=2.0
//   ms_analyse=0.2 ms_render=0.9 target_ms=50 ok=1
// Exit status 1 when ms_per_report is above the target.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "analysis/capacity_report.h"
#include "analysis/phase_summary.h"
#include "analysis/render.h"
#include "bench/cpu_clock.h"

using namespace loadwatch::analysis;
using loadwatch::bench::thread_cpu_seconds;

namespace {

constexpr double kT0 = 1700000000;
constexpr double kTargetMs = 50;

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "report_bench: %s\n", msg);
  std::fprintf(stderr, "usage: report_bench [--iterations N] [--phases N] [--hours H] "
                       "[--targets N]\n");
  std::exit(2);
}

/// Users of the step running at second t: 10 steps of 50 users, capacity 300 users.
double users_at(double t, double phase_seconds) { return 50 * (1 + std::floor(t / phase_seconds)); }

RunSeries history(double seconds, int targets, double phase_seconds, std::size_t& points) {
  RunSeries run;
  auto add = [&](Series& s, double t, double v) {
    s.add(t, v);
    ++points;
  };
  double requests = 0, failures = 0, overflows = 0;
  std::vector<double> cpu(static_cast<std::size_t>(targets), 0.0);
  std::map<std::string, double> modes = {{"user", 0},   {"nice", 0},    {"system", 0},
                                         {"idle", 0},   {"iowait", 0},  {"irq", 0},
                                         {"softirq", 0}, {"steal", 0}};
  run.targets.resize(static_cast<std::size_t>(targets));
  for (int i = 0; i < targets; ++i) run.targets[i].name = "target-" + std::to_string(i);
  run.generator_target = "target-0";
  run.host.cores = 2;
  run.host.time_wait_limit = 262144;
  double mock_requests = 0, mock_errors = 0;
  for (double s = 0; s < seconds; s += 1) {
    double t = kT0 + s;
    double users = users_at(s, phase_seconds);
    double rps = 20 * std::min(users, 300.0) * (1 + 0.01 * std::sin(s));
    requests += rps;
    failures += users > 400 ? rps * 0.01 : 0;
    overflows += users > 350 ? 3 : 0;
    GeneratorSeries& g = run.generator;
    add(g.requests, t, requests);
    add(g.failures, t, failures);
    double p95 = 0.05 * std::max(1.0, users / 300);
    add(g.p50_seconds, t, p95 / 3);
    add(g.p95_seconds, t, p95);
    add(g.p99_seconds, t, p95 * 1.5);
    for (int i = 0; i < targets; ++i) {
      TargetSeries& ts = run.targets[static_cast<std::size_t>(i)];
      double load = std::min(users / 300.0, 1.0) * (i == 1 ? 0.98 : 0.2);
      cpu[static_cast<std::size_t>(i)] += load;
      add(ts.cpu_seconds, t, cpu[static_cast<std::size_t>(i)]);
      add(ts.busiest_process_cores, t, load);
      add(ts.rss_bytes, t, 100e6 + 10 * s + i);
      add(ts.open_fds, t, 50 + users / 10);
      add(ts.max_fds, t, 65536);
    }
    double busy = std::min(users / 300.0, 1.0);
    for (auto& [mode, total] : modes) {
      total += mode == "idle" ? 2 - busy * 1.5 : busy * 0.1;
      add(run.host.cpu_seconds_by_mode[mode], t, total);
    }
    add(run.host.time_wait, t, users * 10);
    add(run.host.listen_overflows, t, overflows);
    add(run.host.ephemeral_port_ratio, t, users / 5000);
    mock_requests += rps / 2;
    mock_errors += 0;
    add(run.mock.requests, t, mock_requests);
    add(run.mock.errors, t, mock_errors);
    add(run.mock.p95_seconds, t, 0.002);
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 20, phases = 10, targets = 10;
  double hours = 2;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) {
      if (std::strcmp(argv[i], name) != 0) return false;
      if (i + 1 >= argc) usage("missing value");
      return true;
    };
    if (arg("--iterations")) {
      iterations = std::atoi(argv[++i]);
    } else if (arg("--phases")) {
      phases = std::atoi(argv[++i]);
    } else if (arg("--hours")) {
      hours = std::atof(argv[++i]);
    } else if (arg("--targets")) {
      targets = std::atoi(argv[++i]);
    } else {
      usage("unknown argument");
    }
  }
  if (iterations < 1 || phases < 1 || targets < 1 || !(hours > 0)) usage("values must be > 0");

  const double seconds = hours * 3600, phase_seconds = seconds / phases;
  std::size_t points = 0;
  RunSeries run = history(seconds, targets, phase_seconds, points);

  double summarize = 0, analysis = 0, render = 0;
  std::size_t bytes = 0;
  std::string knee;
  for (int it = 0; it < iterations; ++it) {
    double c0 = thread_cpu_seconds();
    std::vector<PhaseWindow> windows;
    for (int p = 0; p < phases; ++p) {
      windows.push_back({"step " + std::to_string(p + 1),
                         static_cast<std::int64_t>(users_at(p * phase_seconds, phase_seconds)),
                         kT0 + p * phase_seconds, kT0 + (p + 1) * phase_seconds - 1});
    }
    CapacityReport report;
    for (const PhaseWindow& w : windows) report.phases.push_back(summarize_phase(w, run));
    double c1 = thread_cpu_seconds();
    analyse(report);
    double c2 = thread_cpu_seconds();
    std::string out = render_report(report, Format::table) +
                      render_report(report, Format::markdown) + render_report(report, Format::json);
    double c3 = thread_cpu_seconds();
    bytes = out.size();
    summarize += c1 - c0;
    analysis += c2 - c1;
    render += c3 - c2;
    if (report.knee.phase) knee = report.knee.phase->name;
  }
  double per = 1e3 / iterations;
  double total = (summarize + analysis + render) * per;
  bool ok = total <= kTargetMs;
  std::printf("report points=%zu phases=%d iterations=%d ms_per_report=%.2f ms_summarize=%.2f "
              "ms_analyse=%.2f ms_render=%.2f output_bytes=%zu knee=\"%s\" target_ms=%.0f ok=%d\n",
              points, phases, iterations, total, summarize * per, analysis * per, render * per,
              bytes, knee.c_str(), kTargetMs, ok ? 1 : 0);
  return ok ? 0 : 1;
}
