#include "analysis/bottleneck.h"

#include <algorithm>
#include <cstdio>

#include "analysis/format_figures.h"

namespace loadwatch::analysis {

namespace {

constexpr Check kAllChecks[] = {Check::target_cpu, Check::generator_cpu,    Check::host_cpu,
                                Check::throttling, Check::memory,           Check::iowait,
                                Check::mock,       Check::listen_overflows, Check::ports,
                                Check::fds,        Check::softirq,          Check::queueing};

std::string format(const char* fmt, double a = 0, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

/// The cores a target can use: the host's, or its quota/affinity when smaller.
std::optional<double> usable_cores(const TargetPhaseStats& t, const HostPhaseStats& host) {
  std::optional<double> cores;
  if (host.cores) cores = *host.cores;
  if (t.cpu_limit_cores && (!cores || *t.cpu_limit_cores < *cores)) cores = t.cpu_limit_cores;
  return cores;
}

/// A process pinned at one core, or the whole group at most of its cores.
std::optional<Finding> cpu_saturation(Check check, const TargetPhaseStats& t,
                                      const HostPhaseStats& host) {
  if (t.busiest_process_core_share && *t.busiest_process_core_share >= kProcessCoreSaturation) {
    return Finding{check, t.name,
                   format("its busiest process used %.2f of one core (threshold %.2f)",
                          *t.busiest_process_core_share, kProcessCoreSaturation),
                   *t.busiest_process_core_share, kProcessCoreSaturation};
  }
  std::optional<double> cores = usable_cores(t, host);
  if (t.cpu_cores && cores && *cores > 0) {
    double share = *t.cpu_cores / *cores;
    if (share >= kTargetCoresSaturation) {
      return Finding{check, t.name,
                     format("it used %.2f of its %g cores (%.0f %%, threshold 90 %%)", *t.cpu_cores,
                            *cores, share * 100),
                     share, kTargetCoresSaturation};
    }
  }
  return std::nullopt;
}

void check_targets(const PhaseStats& at, bool generator, std::vector<Finding>& out) {
  for (const TargetPhaseStats& t : at.targets) {
    bool is_generator = at.generator_target && *at.generator_target == t.name;
    if (is_generator != generator) continue;
    if (auto f = cpu_saturation(generator ? Check::generator_cpu : Check::target_cpu, t, at.host)) {
      out.push_back(*f);
    }
  }
}

void check_mock(const PhaseStats& at, const PhaseStats* lowest, std::vector<Finding>& out) {
  const MockPhaseStats& m = at.mock;
  if (m.error_ratio && *m.error_ratio >= kMockErrorRatio) {
    out.push_back({Check::mock, "mock",
                   format("the mock failed %.2f %% of its requests (threshold %.0f %%)",
                          *m.error_ratio * 100, kMockErrorRatio * 100),
                   *m.error_ratio, kMockErrorRatio});
    return;
  }
  if (!m.p95_seconds || !lowest || !lowest->mock.p95_seconds || *lowest->mock.p95_seconds <= 0) {
    return;
  }
  double growth = *m.p95_seconds / *lowest->mock.p95_seconds;
  bool matters = !at.p95_seconds || *at.p95_seconds <= 0 ||
                 *m.p95_seconds >= kMockLatencyShare * *at.p95_seconds;
  if (growth >= kMockLatencyGrowth && matters) {
    out.push_back({Check::mock, "mock",
                   format("the mock's p95 rose to %.1f ms, %.1f x its %.1f ms at the lowest load",
                          *m.p95_seconds * 1e3, growth, *lowest->mock.p95_seconds * 1e3),
                   growth, kMockLatencyGrowth});
  }
}

void check_overflows(const PhaseStats& at, const PhaseStats* previous, std::vector<Finding>& out) {
  const auto& now = at.host.listen_overflows;
  if (!now || *now <= 0) return;
  double before =
      previous && previous->host.listen_overflows ? *previous->host.listen_overflows : 0;
  if (*now <= before) return;
  out.push_back(
      {Check::listen_overflows, "host",
       format("%g accept-queue overflows in the phase (%g in the phase before)", *now, before),
       *now, before});
}

void check_ports(const PhaseStats& at, std::vector<Finding>& out) {
  const HostPhaseStats& h = at.host;
  if (h.ephemeral_port_ratio_max && *h.ephemeral_port_ratio_max >= kPortUsageRatio) {
    out.push_back({Check::ports, "host",
                   format("%.0f %% of the ephemeral port range in use (threshold %.0f %%)",
                          *h.ephemeral_port_ratio_max * 100, kPortUsageRatio * 100),
                   *h.ephemeral_port_ratio_max, kPortUsageRatio});
  } else if (h.time_wait_max && h.time_wait_limit && *h.time_wait_limit > 0 &&
             *h.time_wait_max / *h.time_wait_limit >= kPortUsageRatio) {
    double share = *h.time_wait_max / *h.time_wait_limit;
    out.push_back({Check::ports, "host",
                   format("%g sockets in TIME_WAIT of at most %g (%.0f %%)", *h.time_wait_max,
                          *h.time_wait_limit, share * 100),
                   share, kPortUsageRatio});
  }
}

void check_fds(const PhaseStats& at, std::vector<Finding>& out) {
  for (const TargetPhaseStats& t : at.targets) {
    if (!t.open_fds_max || !t.fd_limit || *t.fd_limit <= 0) continue;
    double share = *t.open_fds_max / *t.fd_limit;
    if (share >= kFdUsageRatio) {
      out.push_back({Check::fds, t.name,
                     format("%g open fds of a limit of %g (%.0f %%)", *t.open_fds_max, *t.fd_limit,
                            share * 100),
                     share, kFdUsageRatio});
    }
  }
}

void check_softirq(const PhaseStats& at, std::vector<Finding>& out) {
  const HostPhaseStats& h = at.host;
  if (!h.softirq_cores || !h.cores || *h.cores <= 0) return;
  double share = *h.softirq_cores / *h.cores;
  if (share >= kSoftirqShare) {
    out.push_back({Check::softirq, "host",
                   format("softirq took %.2f cores, %.0f %% of the host's %g", *h.softirq_cores,
                          share * 100, *h.cores),
                   share, kSoftirqShare});
  }
}

/// The host's CPU in use: busy modes plus steal (time another guest of the hypervisor had).
std::optional<double> host_cpu_used(const HostPhaseStats& h) {
  if (!h.cpu_busy_cores) return std::nullopt;
  auto steal = h.cpu_cores_by_mode.find("steal");
  return *h.cpu_busy_cores + (steal == h.cpu_cores_by_mode.end() ? 0 : steal->second);
}

/// The host's CPU as the targets see it. Niced processes' time (the `nice` mode) yields to
/// normal-priority work: the scheduler gives a nice-19 thread about 1.5 % of a CPU a nice-0
/// thread wants. It is CPU the targets could have had, unless they run niced themselves (their
/// CPU is then in the same mode, competing with it), or their nice value is unknown.
struct HostCpuLoad {
  double used = 0;      // busy + steal, cores
  double niced = 0;     // the nice mode, cores
  double yielding = 0;  // the part of `niced` that yields to the targets
  std::string figures;  // "2.00 of 2 cores busy, 1.40 of it niced work that yields"
  /// The cores the targets could not have had.
  double taken() const { return used - yielding; }
  /// Niced tasks wait for a CPU too, in PSI and the run queue. When niced work got more CPU
  /// than the saturation rule leaves idle, the targets had that CPU to take: those two figures
  /// cannot tell whose waits they count.
  bool waits_include_niced(double cores) const {
    return yielding >= (1 - kHostCpuSaturation) * cores;
  }
};

std::optional<HostCpuLoad> host_cpu_load(const PhaseStats& at) {
  const HostPhaseStats& h = at.host;
  auto used = host_cpu_used(h);
  if (!used || !h.cores) return std::nullopt;
  HostCpuLoad load;
  load.used = *used;
  load.figures = format("%.2f of %g cores busy", *used, *h.cores);
  auto nice = h.cpu_cores_by_mode.find("nice");
  if (nice != h.cpu_cores_by_mode.end()) load.niced = std::clamp(nice->second, 0.0, *used);
  if (load.niced < 0.005) return load;
  std::string niced_targets;
  bool unknown = at.targets.empty();
  for (const TargetPhaseStats& t : at.targets) {
    if (!t.nice) unknown = true;
    if (t.nice && *t.nice > 0) {
      niced_targets +=
          (niced_targets.empty() ? "" : ", ") + t.name + format(" at nice %g", *t.nice);
    }
  }
  if (!niced_targets.empty()) {
    load.figures += format(", %.2f of it niced work that does not yield: ", load.niced) +
                    niced_targets + " too";
  } else if (unknown) {
    load.figures += format(
        ", %.2f of it niced work, counted as busy: the targets' nice "
        "value is unknown",
        load.niced);
  } else {
    load.yielding = load.niced;
    load.figures += format(", %.2f of it niced work that yields", load.niced);
  }
  return load;
}

/// "others 1.20, app 0.60, generator 0.20": who used the host's CPU, the most first.
std::string cpu_users(const PhaseStats& at) {
  std::vector<std::pair<double, std::string>> users;
  if (at.host.others_cpu_cores) users.emplace_back(*at.host.others_cpu_cores, "others");
  for (const TargetPhaseStats& t : at.targets) {
    if (t.cpu_cores) users.emplace_back(*t.cpu_cores, t.name);
  }
  std::stable_sort(users.begin(), users.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [cores, name] : users) {
    out += (out.empty() ? "" : ", ") + name + format(" %.2f", cores);
  }
  return out;
}

void check_host_cpu(const PhaseStats& at, std::vector<Finding>& out) {
  const HostPhaseStats& h = at.host;
  auto load = host_cpu_load(at);
  std::optional<Finding> f;
  std::string figures;
  // Tasks a cgroup quota holds back count as waiting in PSI and as runnable in the run queue:
  // on a host whose CPUs are mostly idle those are the quota's (the throttling check), not
  // the host's, so pressure and the queue judge the host only when it is half busy or more.
  bool busy_enough = !load || load->taken() / *h.cores >= kHostBusyForPressure;
  bool waits_are_targets = !load || !load->waits_include_niced(*h.cores);
  if (load) {
    figures = load->figures;
    auto steal = h.cpu_cores_by_mode.find("steal");
    if (steal != h.cpu_cores_by_mode.end() && steal->second >= 0.005) {
      figures += format(" (steal %.2f)", steal->second);
    }
    double share = load->taken() / *h.cores;
    if (share >= kHostCpuSaturation) {
      f = Finding{Check::host_cpu, "host", "", share, kHostCpuSaturation};
    }
  }
  const char* niced_too = waits_are_targets ? "" : " (niced tasks' waits included)";
  if (h.cpu_pressure_ratio) {
    figures += (figures.empty() ? "" : "; ") +
               format("a task waited for a CPU %.0f %% of the time", *h.cpu_pressure_ratio * 100) +
               niced_too;
    if (!f && busy_enough && waits_are_targets && *h.cpu_pressure_ratio >= kCpuPressureRatio) {
      f = Finding{Check::host_cpu, "host", "", *h.cpu_pressure_ratio, kCpuPressureRatio};
    }
  }
  if (h.run_queue_mean && h.cores) {
    figures += (figures.empty() ? "" : "; ") +
               format("run queue %.1f for %g cores", *h.run_queue_mean, *h.cores) + niced_too;
    double per_core = *h.run_queue_mean / *h.cores;
    if (!f && busy_enough && waits_are_targets && per_core > kRunQueuePerCore) {
      f = Finding{Check::host_cpu, "host", "", per_core, kRunQueuePerCore};
    }
  }
  if (!f) return;
  std::string users = cpu_users(at);
  f->evidence =
      figures + (users.empty() ? "" : "; used by " + users) +
      (h.top_cpu_cores.empty() ? "" : "; busiest processes: " + fmt_busiest(h.top_cpu_cores));
  out.push_back(*f);
}

void check_throttling(const PhaseStats& at, std::vector<Finding>& out) {
  for (const TargetPhaseStats& t : at.targets) {
    if (!t.throttled_period_ratio || *t.throttled_period_ratio < kThrottledPeriodRatio) continue;
    std::string held = t.throttled_seconds_per_second
                           ? format(", held back %.2f s a second", *t.throttled_seconds_per_second)
                           : "";
    std::string limit = t.cpu_limit_cores ? format(" of %g cores", *t.cpu_limit_cores) : "";
    out.push_back({Check::throttling, t.name,
                   format("its cgroup's CPU quota ran out in %.0f %% of the periods (threshold "
                          "%.0f %%)",
                          *t.throttled_period_ratio * 100, kThrottledPeriodRatio * 100) +
                       limit + held,
                   *t.throttled_period_ratio, kThrottledPeriodRatio});
  }
}

double swap_pages(const HostPhaseStats& h) {
  return h.swap_in_pages_per_second.value_or(0) + h.swap_out_pages_per_second.value_or(0);
}

void check_memory(const PhaseStats& at, std::vector<Finding>& out) {
  const HostPhaseStats& h = at.host;
  std::string swap =
      h.swap_in_pages_per_second || h.swap_out_pages_per_second
          ? format("%.0f pages/s swapped in, %.0f out", h.swap_in_pages_per_second.value_or(0),
                   h.swap_out_pages_per_second.value_or(0))
          : "";
  if (h.memory_pressure_ratio && *h.memory_pressure_ratio >= kMemoryPressureRatio) {
    std::string full = h.memory_stall_ratio
                           ? format(", every task at once %.0f %%", *h.memory_stall_ratio * 100)
                           : "";
    out.push_back({Check::memory, "host",
                   format("a task stalled on memory %.0f %% of the time (threshold %.0f %%)",
                          *h.memory_pressure_ratio * 100, kMemoryPressureRatio * 100) +
                       full + (swap.empty() ? "" : "; " + swap),
                   *h.memory_pressure_ratio, kMemoryPressureRatio});
  } else if (swap_pages(h) >= kSwapPagesPerSecond) {
    out.push_back({Check::memory, "host",
                   swap + format(" (threshold %g pages/s)", kSwapPagesPerSecond), swap_pages(h),
                   kSwapPagesPerSecond});
  }
}

std::optional<double> iowait_cores(const HostPhaseStats& h) {
  auto it = h.cpu_cores_by_mode.find("iowait");
  if (it == h.cpu_cores_by_mode.end()) return std::nullopt;
  return it->second;
}

void check_iowait(const PhaseStats& at, std::vector<Finding>& out) {
  const HostPhaseStats& h = at.host;
  auto iowait = iowait_cores(h);
  std::string wait = iowait && h.cores ? format("iowait %.2f of %g cores", *iowait, *h.cores) : "";
  if (h.io_pressure_ratio && *h.io_pressure_ratio >= kIoPressureRatio) {
    out.push_back({Check::iowait, "host",
                   format("a task stalled on I/O %.0f %% of the time (threshold %.0f %%)",
                          *h.io_pressure_ratio * 100, kIoPressureRatio * 100) +
                       (wait.empty() ? "" : "; " + wait),
                   *h.io_pressure_ratio, kIoPressureRatio});
  } else if (iowait && h.cores && *h.cores > 0 && *iowait / *h.cores >= kIowaitShare) {
    out.push_back({Check::iowait, "host",
                   wait + format(" (%.0f %%, threshold %.0f %%)", *iowait / *h.cores * 100,
                                 kIowaitShare * 100),
                   *iowait / *h.cores, kIowaitShare});
  }
}

/// The latency a queueing estimate reads: the median where the generator gives it.
std::optional<double> typical_latency(const PhaseStats& p) {
  return p.p50_seconds ? p.p50_seconds : p.p95_seconds;
}

/// The bounds of typical_latency(p): its histogram bucket's edges, or the figure itself.
std::pair<double, double> typical_latency_bounds(const PhaseStats& p) {
  if (p.p50_seconds)
    return {p.p50_low_seconds.value_or(*p.p50_seconds),
            p.p50_high_seconds.value_or(*p.p50_seconds)};
  return {p.p95_low_seconds.value_or(*p.p95_seconds), p.p95_high_seconds.value_or(*p.p95_seconds)};
}

/// The system under test, for a sentence: the one target that is not the generator, if so.
std::string system_under_test(const PhaseStats& at) {
  const TargetPhaseStats* only = nullptr;
  for (const TargetPhaseStats& t : at.targets) {
    if (at.generator_target && *at.generator_target == t.name) continue;
    if (only) return "the system under test";
    only = &t;
  }
  return only ? only->name : "the system under test";
}

/// Latency at the highest load well above the lowest load's, with CPU to spare: requests wait
/// for a fixed number of slots (in a FIFO of K slots a request waits only while all K are
/// busy). Little's law (in flight = throughput x time in the system) applied to the service
/// time, the latency before any queue formed, counts the slots in use: about K.
void check_queueing(const PhaseStats* lowest, const PhaseStats& top, const PhaseStats& at,
                    std::vector<Finding>& out) {
  if (!top.rps || *top.rps <= 0 || !lowest || lowest == &top) return;
  auto now = typical_latency(top);
  auto base = typical_latency(*lowest);
  if (!now || !base || *base <= 0) return;
  double growth = *now / *base;
  if (growth < kQueueLatencyGrowth) return;
  const char* q = top.p50_seconds && lowest->p50_seconds ? "median" : "p95";
  double in_service = *top.rps * *base;
  double in_flight = *top.rps * *now;
  auto users = [](const PhaseStats& p) {
    return p.users ? format(" at %g users", static_cast<double>(*p.users)) : std::string();
  };
  std::string evidence =
      format(
          "≈ %.1f requests in service at once (%.1f req/s at the highest load x %.1f ms, "
          "the ",
          in_service, *top.rps, *base * 1e3) +
      q + " latency at the lowest load" + users(*lowest) + ")" +
      format("; ≈ %.1f in flight", in_flight) + users(top) +
      format(" (x %.1f ms, %.1f x higher): a pool, a lock or a connection limit of about %.0f",
             *now * 1e3, growth, in_service);
  // K carries the uncertainty of the rate and of the latency it is made of.
  auto [base_low, base_high] = typical_latency_bounds(*lowest);
  double k_low = top.rps_low.value_or(*top.rps) * base_low;
  double k_high = top.rps_high.value_or(*top.rps) * base_high;
  if (k_high - k_low >= 0.05 * in_service) {
    evidence +=
        format(" (%.1f to %.1f from the bounds of the req/s and the latency)", k_low, k_high);
  }
  if (auto load = host_cpu_load(at)) evidence += ", with the host CPU " + load->figures;
  out.push_back({Check::queueing, system_under_test(at), evidence, in_service, kQueueLatencyGrowth,
                 k_low, k_high});
}

/// Why nothing was named: the figures that rule each cause out, as far as they are known.
std::string ruled_out(const PhaseStats& at, const PhaseStats* lowest, const PhaseStats& top) {
  std::vector<std::string> parts;
  std::string targets;
  for (const TargetPhaseStats& t : at.targets) {
    if (!t.cpu_cores) continue;
    auto cores = usable_cores(t, at.host);
    targets += (targets.empty() ? "" : ", ") + t.name + format(" %.2f", *t.cpu_cores) +
               (cores ? format(" of %g cores", *cores) : "");
  }
  if (!targets.empty()) parts.push_back("targets' CPU below their limits (" + targets + ")");
  if (auto load = host_cpu_load(at)) parts.push_back("host CPU " + load->figures);
  if (at.host.cpu_pressure_ratio) {
    auto load = host_cpu_load(at);
    bool niced = load && load->waits_include_niced(*at.host.cores);
    parts.push_back(format("CPU pressure %.0f %%", *at.host.cpu_pressure_ratio * 100) +
                    (niced ? " (niced tasks' waits included)" : ""));
  }
  bool throttling = false;
  for (const TargetPhaseStats& t : at.targets) throttling |= t.throttled_period_ratio.has_value();
  if (throttling) parts.push_back("no quota throttling");
  if (at.host.memory_pressure_ratio || at.host.swap_in_pages_per_second) {
    parts.push_back("no memory pressure or swapping");
  }
  if (auto iowait = iowait_cores(at.host)) parts.push_back(format("iowait %.2f cores", *iowait));
  std::string latency;
  auto now = typical_latency(top);
  auto base = lowest ? typical_latency(*lowest) : std::nullopt;
  if (now && base && *base > 0 && lowest != &top) {
    latency = format("; latency %.1f x its lowest-load value, under the %.1f x of a queue",
                     *now / *base, kQueueLatencyGrowth);
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return (out.empty() ? "no host or process figure is high" : out) + latency;
}

/// The CPU the phase has no figure for: its checks could not fire, so it may be the limit.
std::vector<std::string> unknown_cpu(const PhaseStats& at) {
  std::vector<std::string> out;
  if (!host_cpu_load(at)) out.push_back("the host's CPU");
  for (const TargetPhaseStats& t : at.targets) {
    if (!t.cpu_cores) out.push_back("target " + t.name + "'s CPU");
  }
  return out;
}

bool has_system_figures(const PhaseStats& p) {
  const HostPhaseStats& h = p.host;
  return !p.targets.empty() || h.cores || !h.cpu_cores_by_mode.empty() || h.softirq_cores ||
         h.time_wait_max || h.listen_overflows || h.ephemeral_port_ratio_max ||
         p.mock.p95_seconds || p.mock.error_ratio;
}

}  // namespace

const char* check_name(Check c) {
  switch (c) {
    case Check::target_cpu:
      return "target_cpu";
    case Check::generator_cpu:
      return "generator_cpu";
    case Check::host_cpu:
      return "host_cpu";
    case Check::throttling:
      return "throttling";
    case Check::memory:
      return "memory";
    case Check::iowait:
      return "iowait";
    case Check::mock:
      return "mock";
    case Check::listen_overflows:
      return "listen_overflows";
    case Check::ports:
      return "ports";
    case Check::fds:
      return "fds";
    case Check::softirq:
      return "softirq";
    case Check::queueing:
      return "queueing";
  }
  return "?";
}

const char* what_saturated(Check c) {
  switch (c) {
    case Check::target_cpu:
      return "the target's CPU";
    case Check::generator_cpu:
      return "the load generator's CPU";
    case Check::host_cpu:
      return "the host's CPU";
    case Check::throttling:
      return "the target's cgroup CPU quota (throttling)";
    case Check::memory:
      return "memory (pressure, swapping)";
    case Check::iowait:
      return "I/O (iowait, I/O pressure)";
    case Check::mock:
      return "the mock";
    case Check::listen_overflows:
      return "the listen (accept) queue";
    case Check::ports:
      return "ephemeral ports / TIME_WAIT";
    case Check::fds:
      return "file descriptors";
    case Check::softirq:
      return "softirq (network packet processing)";
    case Check::queueing:
      return "a queueing limit with idle CPU";
  }
  return "?";
}

std::optional<Check> check_from_name(const std::string& name) {
  for (Check c : kAllChecks) {
    if (name == check_name(c)) return c;
  }
  return std::nullopt;
}

Bottleneck find_bottleneck(const PhaseStats& at, const PhaseStats* previous,
                           const PhaseStats* lowest, const PhaseStats* highest) {
  Bottleneck b;
  if (!has_system_figures(at)) {
    b.summary = "not assessed: the input carries no process, host or mock figures";
    return b;
  }
  b.assessed = true;
  check_targets(at, false, b.findings);
  check_targets(at, true, b.findings);
  check_host_cpu(at, b.findings);
  check_throttling(at, b.findings);
  check_memory(at, b.findings);
  check_iowait(at, b.findings);
  check_mock(at, lowest, b.findings);
  check_overflows(at, previous, b.findings);
  check_ports(at, b.findings);
  check_fds(at, b.findings);
  check_softirq(at, b.findings);
  if (b.findings.empty()) check_queueing(lowest, highest ? *highest : at, at, b.findings);
  if (b.findings.empty()) {
    b.summary = "no limit loadwatch can see: " + ruled_out(at, lowest, highest ? *highest : at);
    std::vector<std::string> unknown = unknown_cpu(at);
    if (unknown.empty()) {
      b.summary += "; the limit is outside what it watches";
    } else {
      // Never "nothing saturated" about a CPU it has no figure for.
      std::string list;
      for (const std::string& u : unknown) list += (list.empty() ? "" : ", ") + u;
      b.summary += "; not known in this phase: " + list + ", which may be the limit";
    }
    return b;
  }
  const Finding& f = b.findings.front();
  b.summary = std::string(what_saturated(f.check)) + " (" + f.subject + "): " + f.evidence;
  return b;
}

}  // namespace loadwatch::analysis
