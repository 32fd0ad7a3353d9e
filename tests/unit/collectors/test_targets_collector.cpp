// The targets collector over the controlled fixture tree tests/fixtures/targets: every
// exported value, checked against the captured files it was built from.
#include <catch2/catch.hpp>
#include <optional>

#include "collectors/collector.h"
#include "collectors/targets.h"
#include "config/config.h"
#include "config/options.h"
#include "metrics/metric_sink.h"
#include "procfs/fs_root.h"
#include "procfs/proc_boot_time.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;

namespace {

std::optional<double> value(const MetricSink& sink, const std::string& name,
                            const std::string& target, const std::string& k = "",
                            const std::string& v = "") {
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

}  // namespace

TEST_CASE("collector over the fixture tree", "[collector]") {
  Options options;
  Config config;
  config.targets = {
      {"mb", parse_selector("unit:mb.service"), true},
      {"sshd", parse_selector("port:3000"), true},
      {"odd", parse_selector("comm:a b) c"), false},
      {"none", parse_selector("comm:nothing"), true},
  };
  FsRoot proc(fixture_path("targets/proc"));
  FsRoot sys(fixture_path("targets/sys"));
  auto c = make_targets_collector(CollectorEnv{options, config, proc, sys, nullptr});
  MetricSink sink;
  SampleContext ctx{proc, sys, 0, {}};
  c->collect(ctx, sink);

  auto v = [&](const std::string& name, const std::string& target, const std::string& k = "",
               const std::string& l = "") {
    auto x = value(sink, name, target, k, l);
    INFO(name << " " << target);
    REQUIRE(x);
    return *x;
  };

  // mb: unit cgroup {100, 101, 103} plus descendants {102 (a zombie)}.
  CHECK(v("loadwatch_target_up", "mb") == 1);
  CHECK(v("loadwatch_target_processes", "mb") == 3);
  CHECK(v("loadwatch_process_cpu_seconds_total", "mb", "mode", "user") == Approx(0.08));
  CHECK(v("loadwatch_process_cpu_seconds_total", "mb", "mode", "system") == Approx(0.09));
  CHECK(v("loadwatch_process_minor_page_faults_total", "mb") == 2952 + 132 + 132 + 238);
  CHECK(v("loadwatch_process_major_page_faults_total", "mb") == 0);
  CHECK(v("loadwatch_process_context_switches_total", "mb", "ctxswitchtype", "voluntary") ==
        30 + 1 + 1 + 1);
  CHECK(v("loadwatch_process_context_switches_total", "mb", "ctxswitchtype", "nonvoluntary") ==
        50 + 4 + 4 + 5);
  CHECK(v("loadwatch_process_read_bytes_total", "mb") == 0);
  CHECK(v("loadwatch_process_write_bytes_total", "mb") == 4096);
  CHECK(v("loadwatch_process_resident_memory_bytes", "mb") == (13636 + 1784 + 1784) * 1024.0);
  CHECK(v("loadwatch_process_resident_memory_peak_bytes", "mb") == (13636 + 1784 + 1784) * 1024.0);
  CHECK(v("loadwatch_process_virtual_memory_bytes", "mb") == 319037440.0 + 2 * 2990080.0);
  CHECK(v("loadwatch_process_swap_bytes", "mb") == 0);
  CHECK(v("loadwatch_process_open_fds", "mb") == 5 + 3 + 3);
  CHECK(v("loadwatch_process_max_fds", "mb") == 20000);
  CHECK(v("loadwatch_process_fd_usage_ratio", "mb") == Approx(5.0 / 20000));
  CHECK(v("loadwatch_process_threads", "mb") == 5 + 1 + 1);
  const auto btime = parse_boot_time(proc.read_or_throw("stat"));
  REQUIRE(btime);
  CHECK(v("loadwatch_process_start_time_seconds", "mb") == Approx(*btime + 1000.06));
  CHECK(v("loadwatch_target_restarts_total", "mb") == 0);
  CHECK(v("loadwatch_target_partial_reads_total", "mb") == 0);

  CHECK(v("loadwatch_target_up", "sshd") == 1);
  CHECK(v("loadwatch_target_processes", "sshd") == 1);
  CHECK(v("loadwatch_target_up", "odd") == 1);
  CHECK(v("loadwatch_target_up", "none") == 0);
  CHECK(v("loadwatch_target_processes", "none") == 0);
  CHECK_FALSE(value(sink, "loadwatch_process_max_fds", "none"));
  CHECK_FALSE(value(sink, "loadwatch_process_resident_memory_peak_bytes", "none"));

  REQUIRE(ctx.targets.size() == 4);
  CHECK(ctx.targets[0].name == "mb");
  CHECK(ctx.targets[0].selector == "unit:mb.service");
  CHECK(ctx.targets[0].up);
  CHECK(ctx.targets[0].pids == std::vector<pid_t>{100, 101, 103});
  CHECK(ctx.targets[1].pids == std::vector<pid_t>{200});
  CHECK(ctx.targets[2].pids == std::vector<pid_t>{300});
  CHECK(ctx.targets[3].pids.empty());

  // A second sample of the unchanged tree: same counters, no restart.
  MetricSink again;
  SampleContext ctx2{proc, sys, 0, {}};
  c->collect(ctx2, again);
  CHECK(value(again, "loadwatch_process_minor_page_faults_total", "mb") == 2952 + 132 + 132 + 238);
  CHECK(value(again, "loadwatch_target_restarts_total", "mb") == 0);
}
