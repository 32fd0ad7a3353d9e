#include "analysis/bottleneck.h"

#include <algorithm>
#include <cstdio>

namespace loadwatch::analysis {

namespace {

constexpr Check kAllChecks[] = {Check::target_cpu,       Check::generator_cpu, Check::mock,
                                Check::listen_overflows, Check::ports,         Check::fds,
                                Check::softirq};

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
                     format("it used %.2f of its %g cores (%.0f %%, threshold 90 %%)",
                            *t.cpu_cores, *cores, share * 100),
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
  double before = previous && previous->host.listen_overflows ? *previous->host.listen_overflows : 0;
  if (*now <= before) return;
  out.push_back({Check::listen_overflows, "host",
                 format("%g accept-queue overflows in the phase (%g in the phase before)", *now,
                        before),
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

bool has_system_figures(const PhaseStats& p) {
  const HostPhaseStats& h = p.host;
  return !p.targets.empty() || h.cores || !h.cpu_cores_by_mode.empty() || h.softirq_cores ||
         h.time_wait_max || h.listen_overflows || h.ephemeral_port_ratio_max ||
         p.mock.p95_seconds || p.mock.error_ratio;
}

}  // namespace

const char* check_name(Check c) {
  switch (c) {
    case Check::target_cpu: return "target_cpu";
    case Check::generator_cpu: return "generator_cpu";
    case Check::mock: return "mock";
    case Check::listen_overflows: return "listen_overflows";
    case Check::ports: return "ports";
    case Check::fds: return "fds";
    case Check::softirq: return "softirq";
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
                           const PhaseStats* lowest) {
  Bottleneck b;
  if (!has_system_figures(at)) {
    b.summary = "not assessed: the input carries no process, host or mock figures";
    return b;
  }
  b.assessed = true;
  check_targets(at, false, b.findings);
  check_targets(at, true, b.findings);
  check_mock(at, lowest, b.findings);
  check_overflows(at, previous, b.findings);
  check_ports(at, b.findings);
  check_fds(at, b.findings);
  check_softirq(at, b.findings);
  if (b.findings.empty()) {
    b.summary =
        "nothing loadwatch sees saturated: the limit is elsewhere (e.g. a database on another "
        "host, a lock, a pool size)";
    return b;
  }
  const Finding& f = b.findings.front();
  static const char* const what[] = {
      "the target's CPU", "the load generator's CPU", "the mock",
      "the listen (accept) queue", "ephemeral ports / TIME_WAIT", "file descriptors",
      "softirq (network packet processing)"};
  b.summary = std::string(what[static_cast<int>(f.check)]) + " (" + f.subject + "): " + f.evidence;
  return b;
}

}  // namespace loadwatch::analysis
