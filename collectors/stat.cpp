#include "collectors/stat.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>

#include "collectors/host_file.h"
#include "procfs/stat.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

constexpr char kCpuHelp[] =
    "Seconds the CPUs spent in each mode since boot (procfs stat; guest time is part of user "
    "and nice).";

class StatCollector final : public Collector {
 public:
  explicit StatCollector(double ticks_per_second)
      : hz_(ticks_per_second),
        jump_back_ticks_(static_cast<std::uint64_t>(kJumpBackSeconds * ticks_per_second)) {}

  void collect(SampleContext& ctx, MetricSink& out) override {
    const ProcStat st = file_.read_and_parse(ctx.proc, parse_stat);

    std::map<std::uint32_t, Ticks> seen;
    for (const CpuTicks& c : st.cpus) {
      Ticks ticks = c.ticks;
      hold_back(c.cpu, c.modes, ticks);
      seen.emplace(c.cpu, ticks);
      const std::string cpu = std::to_string(c.cpu);
      for (size_t i = 0; i < c.modes; ++i) {
        out.counter("loadwatch_cpu_seconds_total", kCpuHelp, {{"cpu", cpu}, {"mode", kCpuModes[i]}},
                    static_cast<double>(ticks[i]) / hz_);
      }
    }
    // CPUs that went offline drop out; one coming back starts from what the kernel says.
    last_ = std::move(seen);

    if (st.context_switches) {
      out.counter("loadwatch_context_switches_total",
                  "Context switches on all CPUs since boot (procfs stat ctxt).", {},
                  static_cast<double>(*st.context_switches));
    }
    if (st.forks) {
      out.counter("loadwatch_forks_total",
                  "Processes and threads created (fork, clone) since boot (procfs stat processes).",
                  {}, static_cast<double>(*st.forks));
    }
    if (st.procs_running) {
      out.gauge("loadwatch_procs_running",
                "Threads runnable or running (procfs stat procs_running).", {},
                static_cast<double>(*st.procs_running));
    }
    if (st.procs_blocked) {
      out.gauge("loadwatch_procs_blocked",
                "Threads blocked waiting for I/O to complete (procfs stat procs_blocked).", {},
                static_cast<double>(*st.procs_blocked));
    }
  }

 private:
  using Ticks = std::array<std::uint64_t, kCpuModes.size()>;
  static constexpr double kJumpBackSeconds = 3.0;
  static constexpr size_t kIdle = 3;

  // Why: a CPU's idle and iowait times can go backwards. On NO_HZ kernels they are computed
  // for a sleeping CPU from its idle-entry timestamp and corrected later
  // (kernel/time/tick-sched.c get_cpu_idle_time_us; proc(5): "iowait ... not reliable").
  // A decrease reads as a counter reset to Prometheus and makes rate() spike, so a small
  // decrease is held at the previous value. A large idle drop (>= 3 s) means the CPU's
  // counters really restarted (hotplug); then the kernel's values are taken as they are.
  // node_exporter's cpu collector does the same.
  void hold_back(std::uint32_t cpu, size_t modes, Ticks& ticks) const {
    auto it = last_.find(cpu);
    if (it == last_.end()) return;
    const Ticks& prev = it->second;
    if (prev[kIdle] > ticks[kIdle] && prev[kIdle] - ticks[kIdle] >= jump_back_ticks_) return;
    for (size_t i = 0; i < modes; ++i) ticks[i] = std::max(ticks[i], prev[i]);
  }

  double hz_;
  std::uint64_t jump_back_ticks_;
  std::map<std::uint32_t, Ticks> last_;  // last exported ticks per CPU
  HostFile file_{"stat"};
};

}  // namespace

std::unique_ptr<Collector> make_stat_collector(const CollectorEnv&) {
  // /proc/stat counts in USER_HZ ticks; sysconf(_SC_CLK_TCK) reports USER_HZ (proc(5)).
  long hz = ::sysconf(_SC_CLK_TCK);
  return std::make_unique<StatCollector>(hz > 0 ? static_cast<double>(hz) : 100.0);
}

}  // namespace loadwatch
