#include "analysis/fleet_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/fleet_latency.h"
#include "analysis/format_figures.h"
#include "analysis/json_fields.h"

namespace loadwatch::analysis {

namespace {

using ojson = nlohmann::ordered_json;
namespace jf = json_fields;

bool has_generator(const PhaseStats& p) {
  return p.rps || !p.rps_method.empty() || !p.rps_unavailable.empty() || p.generator_target;
}
bool has_mock(const PhaseStats& p) { return p.mock.p95_seconds || p.mock.error_ratio; }

/// Throughput summed over the generator hosts; a host without a figure leaves the sum out,
/// with its reason: a partial sum would look like a drop.
void sum_throughput(PhaseStats& out, const std::vector<const PhaseStats*>& generators,
                    const std::vector<std::string>& names) {
  double sum = 0, low = 0, high = 0;
  bool bounded = true;
  for (std::size_t g = 0; g < generators.size(); ++g) {
    const PhaseStats& p = *generators[g];
    if (!p.rps) {
      out.rps_unavailable =
          names[g] + ": " + (p.rps_unavailable.empty() ? "no throughput" : p.rps_unavailable);
      return;
    }
    sum += *p.rps;
    bounded = bounded && p.rps_low && p.rps_high;
    if (bounded) {
      low += *p.rps_low;
      high += *p.rps_high;
    }
  }
  if (generators.empty()) {
    out.rps_unavailable = "no host watches a load generator";
    return;
  }
  out.rps = sum;
  if (bounded) {
    out.rps_low = low;
    out.rps_high = high;
  }
  out.rps_method = generators.size() == 1 ? generators[0]->rps_method
                                          : "the sum over " + std::to_string(generators.size()) +
                                                " generator hosts of each one's own figure";
}

/// Errors as failures over requests: each host's ratio weighted by its throughput.
void weigh_errors(PhaseStats& out, const std::vector<const PhaseStats*>& generators) {
  double failures = 0, requests = 0;
  for (const PhaseStats* p : generators) {
    if (!p->rps || !p->error_ratio) return;
    failures += *p->error_ratio * *p->rps;
    requests += *p->rps;
  }
  if (requests > 0) out.error_ratio = failures / requests;
}

/// Latency: one generator host's quantiles stand as they are; several hosts' histograms are
/// summed by bucket, and without every one of them there is none (quantiles are never
/// averaged).
void latency(PhaseStats& out, const std::vector<const PhaseStats*>& generators,
             const std::vector<const FleetHost*>& hosts, std::size_t k) {
  if (generators.size() > 1) {
    std::vector<const std::vector<HistogramBucket>*> histograms;
    std::string missing;  // every host without one, each with its reason
    for (const FleetHost* h : hosts) {
      if (k < h->phase_histograms.size() && !h->phase_histograms[k].empty()) {
        histograms.push_back(&h->phase_histograms[k]);
        continue;
      }
      std::string why = k < h->phase_histogram_unavailable.size()
                            ? h->phase_histogram_unavailable[k]
                            : std::string();
      if (why.empty()) why = h->histogram_unavailable;
      if (why.empty()) {
        why = h->phase_histograms.empty()
                  ? "its loadwatch's report carries quantiles, not histogram buckets"
                  : "none over this phase";
      }
      missing += (missing.empty() ? "" : "; ") + h->name + ": " + why;
    }
    if (!missing.empty()) {
      out.latency_window = "unavailable: " + std::to_string(generators.size()) +
                           " generator hosts, and a histogram is missing (" + missing +
                           "); quantiles are never averaged (see each host's own latency)";
      return;
    }
    if (!merge_host_histograms(out, histograms, hosts[0]->histogram_window)) {
      out.latency_window = "unavailable: the " + std::to_string(generators.size()) +
                           " generator hosts' histograms have other buckets or no request; "
                           "quantiles are never averaged (see each host's own latency)";
    }
    return;
  }
  if (generators.empty()) return;
  const std::string& name = hosts[0]->name;
  const PhaseStats& p = *generators[0];
  bool quantiles = p.p50_seconds || p.p95_seconds || p.p99_seconds;
  if (!quantiles && k < hosts[0]->phase_histograms.size() &&
      merge_host_histograms(out, {&hosts[0]->phase_histograms[k]}, hosts[0]->histogram_window)) {
    return;
  }
  out.p50_seconds = p.p50_seconds;
  out.p95_seconds = p.p95_seconds;
  out.p99_seconds = p.p99_seconds;
  out.p50_low_seconds = p.p50_low_seconds;
  out.p50_high_seconds = p.p50_high_seconds;
  out.p95_low_seconds = p.p95_low_seconds;
  out.p95_high_seconds = p.p95_high_seconds;
  out.p99_low_seconds = p.p99_low_seconds;
  out.p99_high_seconds = p.p99_high_seconds;
  out.latency_method = p.latency_method;
  out.latency_window = name + ": " + p.latency_window;
}

/// The fleet's phase k: figures of every host's phase k.
PhaseStats fleet_phase(const FleetReport& r, std::size_t k) {
  std::vector<const PhaseStats*> generators;
  std::vector<std::string> names;
  std::vector<const FleetHost*> generator_hosts;
  // The hosts' histograms are read over the first generator host's phases: its own index.
  std::optional<std::size_t> histogram_phase;
  PhaseStats out;
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    const PhaseStats& p = r.hosts[h].report.phases[r.host_phase[h][k]];
    if (out.name.empty()) {
      out.name = p.name;
      out.users = p.users;
      out.start = p.start;
      out.end = p.end;
      out.duration_seconds = p.duration_seconds;
    }
    if (r.roles[h] == HostRole::generator) {
      generators.push_back(&p);
      names.push_back(r.hosts[h].name);
      generator_hosts.push_back(&r.hosts[h]);
      if (!histogram_phase) histogram_phase = r.host_phase[h][k];
    }
    for (const TargetPhaseStats& t : p.targets) {
      TargetPhaseStats named = t;
      named.name = r.hosts[h].name + "/" + t.name;
      out.targets.push_back(std::move(named));
    }
  }
  // The stable window is the generators' (their figures are what it cuts), else the first host's.
  const PhaseStats& window =
      generators.empty() ? r.hosts[0].report.phases[r.host_phase[0][k]] : *generators[0];
  out.stable_start = window.stable_start;
  out.stable_seconds = window.stable_seconds;
  out.warmup_rule = window.warmup_rule;
  sum_throughput(out, generators, names);
  weigh_errors(out, generators);
  latency(out, generators, generator_hosts, histogram_phase.value_or(k));
  return out;
}

/// How long phase `p` lasted, when known.
std::optional<double> phase_seconds(const PhaseStats& p) {
  if (p.start && p.end) return *p.end - *p.start;
  return std::nullopt;
}

/// The phase each host is judged at: the fleet's throughput knee, else its highest load by
/// users, whether or not its throughput is known there. A generator starved of CPU (its own
/// quota) reports too few counter updates to give a rate at the loads it cannot keep up with,
/// and judging at the highest load that has one would judge where nothing had saturated yet.
/// A stub shorter than half the longest phase (a step opened as the generator quit) is no load.
std::optional<std::size_t> judged_phase(const CapacityReport& fleet) {
  if (fleet.knee.phase) return fleet.knee.phase->index;
  double longest = 0;
  for (const PhaseStats& p : fleet.phases)
    longest = std::max(longest, phase_seconds(p).value_or(0));
  std::optional<std::size_t> most;
  for (std::size_t k = 0; k < fleet.phases.size(); ++k) {
    const PhaseStats& p = fleet.phases[k];
    auto seconds = phase_seconds(p);
    if (!p.users || (seconds && *seconds < longest / 2)) continue;
    if (!most || *p.users >= *fleet.phases[*most].users) most = k;
  }
  if (most) return most;
  if (!fleet.phases.empty()) return fleet.phases.size() - 1;
  return std::nullopt;
}

/// Where a finding ranks among every host's: the check order, except that a host's CPU taken
/// mostly by processes outside the test (at least half of its busy cores are others': another
/// tenant of a machine the hosts share, as containers and VMs do) ranks after a process held
/// at its own limit on any host (its CPU against its quota or affinity, quota throttling).
/// That process is the test's own limit; the machine's busy cores would be busy without it.
double fleet_rank(const Finding& f, const PhaseStats& at) {
  double rank = static_cast<double>(f.check);
  const HostPhaseStats& h = at.host;
  if (f.check == Check::host_cpu && h.others_cpu_cores && h.cpu_busy_cores &&
      *h.others_cpu_cores >= 0.5 * *h.cpu_busy_cores) {
    rank = static_cast<double>(Check::throttling) + 0.5;
  }
  return rank;
}

/// Same-named targets on hosts of one role: one far busier than another is uneven load.
void uneven_targets(FleetReport& r, std::size_t k) {
  std::map<std::string, std::vector<std::pair<std::string, double>>> by_target;
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    for (const TargetPhaseStats& t : r.hosts[h].report.phases[r.host_phase[h][k]].targets) {
      if (!t.cpu_cores) continue;
      by_target[std::string(host_role_name(r.roles[h])) + "\n" + t.name].emplace_back(
          r.hosts[h].name, *t.cpu_cores);
    }
  }
  for (const auto& [key, cpus] : by_target) {
    if (cpus.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(
        cpus.begin(), cpus.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (hi->second < kUnevenTargetMinCores || hi->second < kUnevenTargetCpu * lo->second) continue;
    std::string target = key.substr(key.find('\n') + 1);
    r.warnings.push_back(hi->first + "'s " + target + ": " + fmt_cores(hi->second) +
                         " cores while " + lo->first + "'s sat at " + fmt_cores(lo->second) +
                         ": the load is spread unevenly");
  }
}

/// Where a host's phases start on the reader's clock differs from the first host's by more
/// than the skew bound allows: its windows do not cover the same stretch of time.
void compare_phase_starts(FleetReport& r) {
  const FleetHost& ref = r.hosts[0];
  if (!ref.skew_seconds) return;
  for (std::size_t h = 1; h < r.hosts.size(); ++h) {
    const FleetHost& host = r.hosts[h];
    if (!host.skew_seconds) continue;
    double bound = kClockSkewWarnSeconds + *ref.skew_uncertainty + *host.skew_uncertainty;
    for (std::size_t k = 0; k < r.host_phase[0].size(); ++k) {
      const auto& a = ref.report.phases[r.host_phase[0][k]].start;
      const auto& b = host.report.phases[r.host_phase[h][k]].start;
      if (!a || !b) continue;
      double off = (*b - *host.skew_seconds) - (*a - *ref.skew_seconds);
      if (std::fabs(off) > bound) {
        r.warnings.push_back(host.name + "'s phase " + std::to_string(k + 1) + " starts " +
                             fmt_number(off, 3) + " s from " + ref.name +
                             "'s on the reader's clock: its windows cover another stretch");
        break;
      }
    }
  }
}

/// A phase's start on the reader's clock (its host's skew taken off, when known).
std::optional<double> reader_start(const FleetHost& host, const PhaseStats& p) {
  if (!p.start) return std::nullopt;
  return *p.start - host.skew_seconds.value_or(0);
}

/// The fleet's phases: the first host's that every host has, each host's own index of each.
/// A phase one host lacks (Prometheus scraped none of a short one there) is left out with a
/// warning, and the phases after it stay matched.
void match_phases(FleetReport& r) {
  r.host_phase.assign(r.hosts.size(), {});
  std::vector<std::size_t> next(r.hosts.size(), 0);
  std::vector<std::string> left_out;
  const FleetHost& first = r.hosts[0];
  for (std::size_t k = 0; k < first.report.phases.size(); ++k) {
    const PhaseStats& ref = first.report.phases[k];
    std::vector<std::size_t> found{k};
    std::string missing;
    for (std::size_t h = 1; h < r.hosts.size(); ++h) {
      auto j = match_phase(first, ref, r.hosts[h], next[h]);
      if (!j) {
        missing += (missing.empty() ? "" : ", ") + r.hosts[h].name;
        continue;
      }
      found.push_back(*j);
    }
    if (!missing.empty()) {
      left_out.push_back(ref.name + " (not on " + missing + ")");
      continue;
    }
    for (std::size_t h = 0; h < r.hosts.size(); ++h) {
      r.host_phase[h].push_back(found[h]);
      next[h] = found[h] + 1;
    }
  }
  for (std::size_t h = 1; h < r.hosts.size(); ++h) {
    const auto& own = r.host_phase[h];
    const auto& ps = r.hosts[h].report.phases;
    for (std::size_t j = 0; j < ps.size(); ++j) {
      if (std::find(own.begin(), own.end(), j) != own.end()) continue;
      left_out.push_back(r.hosts[h].name + "'s " + ps[j].name + " (not on " + first.name + ")");
    }
  }
  if (left_out.empty()) return;
  std::string list;
  constexpr std::size_t kNamed = 5;  // a host with hundreds of phases of its own: one line
  for (std::size_t i = 0; i < std::min(kNamed, left_out.size()); ++i) {
    list += (i ? "; " : "") + left_out[i];
  }
  if (left_out.size() > kNamed)
    list += "; and " + std::to_string(left_out.size() - kNamed) + " more";
  r.warnings.push_back("phases not on every host, left out of the fleet's figures: " + list);
}

/// A generator host's request-duration histograms as the fleet's latency used them: per phase
/// of the first generator host (whose windows they cover), the requests counted and, where
/// known, between which moments; or why there is none. Empty for a host without any.
ojson latency_histograms(const FleetReport& r, const FleetHost& host) {
  if (host.phase_histograms.empty() && host.histogram_unavailable.empty()) return ojson();
  ojson out = ojson::object();
  jf::put(out, "window", host.histogram_window);
  jf::put(out, "unavailable", host.histogram_unavailable);
  const FleetHost* first = nullptr;  // the first generator host: the phases' names
  for (std::size_t h = 0; h < r.hosts.size() && !first; ++h) {
    if (r.roles[h] == HostRole::generator) first = &r.hosts[h];
  }
  ojson phases = ojson::array();
  for (std::size_t k = 0; k < host.phase_histograms.size(); ++k) {
    ojson p = ojson::object();
    if (first && k < first->report.phases.size()) p["phase"] = first->report.phases[k].name;
    const auto& buckets = host.phase_histograms[k];
    if (!buckets.empty()) p["requests"] = buckets.back().count;
    if (k < host.histogram_spans.size() && host.histogram_spans[k]) {
      p["counted_from"] = host.histogram_spans[k]->first;
      p["counted_to"] = host.histogram_spans[k]->second;
    }
    if (k < host.phase_histogram_unavailable.size())
      jf::put(p, "unavailable", host.phase_histogram_unavailable[k]);
    phases.push_back(std::move(p));
  }
  out["phases"] = phases;
  return out;
}

}  // namespace

const char* host_role_name(HostRole role) {
  switch (role) {
    case HostRole::generator:
      return "generator host";
    case HostRole::target:
      return "target host";
    case HostRole::mock:
      return "mock host";
    case HostRole::unknown:
      return "host";
  }
  return "host";
}

std::optional<std::size_t> match_phase(const FleetHost& first, const PhaseStats& ref,
                                       const FleetHost& host, std::size_t after) {
  std::optional<std::size_t> best;
  double best_gap = 0;
  auto at = reader_start(first, ref);
  double within = kClockSkewWarnSeconds;
  if (ref.start && ref.end) within = std::max(within, (*ref.end - *ref.start) / 2);
  for (std::size_t j = after; j < host.report.phases.size(); ++j) {
    const PhaseStats& p = host.report.phases[j];
    if (p.name != ref.name) continue;
    auto start = reader_start(host, p);
    double gap = at && start ? std::fabs(*at - *start) : 0;
    if (gap > within) continue;
    if (!best || gap < best_gap) best = j, best_gap = gap;
    if (!at || !start) break;  // no instant to choose by: the first in order
  }
  return best;
}

HostRole infer_role(const CapacityReport& report) {
  const auto& ps = report.phases;
  if (std::any_of(ps.begin(), ps.end(), has_generator)) return HostRole::generator;
  if (std::any_of(ps.begin(), ps.end(), has_mock)) return HostRole::mock;
  if (std::any_of(ps.begin(), ps.end(), [](const PhaseStats& p) { return !p.targets.empty(); })) {
    return HostRole::target;
  }
  return HostRole::unknown;
}

FleetReport build_fleet_report(std::vector<FleetHost> hosts) {
  FleetReport r;
  r.hosts = std::move(hosts);
  if (r.hosts.empty()) return r;
  r.run = r.hosts[0].report.run;
  match_phases(r);
  const std::size_t phases = r.host_phase[0].size();
  for (const FleetHost& h : r.hosts) {
    r.roles.push_back(infer_role(h.report));
    if (h.skew_seconds &&
        std::fabs(*h.skew_seconds) - h.skew_uncertainty.value_or(0) > kClockSkewWarnSeconds) {
      r.warnings.push_back(h.name + "'s clock is " + fmt_number(*h.skew_seconds, 3) +
                           " s off the reader's (more than " + fmt_number(kClockSkewWarnSeconds) +
                           " s): fix its time sync; its phases were placed on its own clock");
    } else if (!h.skew_seconds) {
      r.warnings.push_back(h.name + "'s clock skew is unknown: " + h.skew_unavailable);
    }
  }
  compare_phase_starts(r);
  r.fleet.run = r.run;
  r.fleet.input = "loadwatch fleet:";
  for (const FleetHost& h : r.hosts) r.fleet.input += " " + h.name;
  for (std::size_t k = 0; k < phases; ++k) r.fleet.phases.push_back(fleet_phase(r, k));
  analyse(r.fleet);

  auto at = judged_phase(r.fleet);
  if (at) uneven_targets(r, *at);
  // Every host judged at the same phase; the first finding in check order, over all hosts,
  // is what saturated first.
  const HostVerdict* first = nullptr;
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    HostVerdict v;
    v.host = r.hosts[h].name;
    v.role = r.roles[h];
    const auto& ps = r.hosts[h].report.phases;
    const auto& own = r.host_phase[h];
    if (at && *at < own.size()) {
      // Judged at its own phase of the fleet's knee, against its own phases of the fleet.
      v.phase = *at;
      v.result = find_bottleneck(ps[own[*at]], *at > 0 ? &ps[own[*at - 1]] : nullptr,
                                 &ps[own.front()], &ps[own.back()]);
    } else {
      v.result.summary = "not assessed: no phase to judge";
    }
    r.verdicts.push_back(std::move(v));
  }
  const Finding* finding = nullptr;
  double best = 0;
  for (std::size_t h = 0; h < r.verdicts.size(); ++h) {
    const HostVerdict& v = r.verdicts[h];
    if (!v.phase) continue;
    const PhaseStats& judged = r.hosts[h].report.phases[r.host_phase[h][*v.phase]];
    for (const Finding& f : v.result.findings) {
      double rank = fleet_rank(f, judged);
      if (!first || rank < best) first = &v, finding = &f, best = rank;
    }
  }
  std::string where = at ? fmt_phase(r.fleet.phases[*at].name, r.fleet.phases[*at].users) : "";
  std::string basis = r.fleet.knee.phase ? "at the fleet's throughput knee, " : "at ";
  if (first) {
    r.summary = basis + where + ": " + first->host + " (" + host_role_name(first->role) +
                "): " + what_saturated(finding->check) + " (" + finding->subject +
                "): " + finding->evidence;
  } else if (at) {
    r.summary = basis + where + ": no host shows a limit loadwatch can see";
  } else {
    r.summary = "not assessed: the run has no phases";
  }
  return r;
}

Document fleet_document(const FleetReport& r) {
  Document doc;
  doc.title = "Run across " + std::to_string(r.hosts.size()) + " hosts" +
              (r.run ? ": " + r.run->id : std::string());
  doc.lines.push_back("Verdict: " + r.summary);
  for (const auto& w : r.warnings) doc.lines.push_back("- warning: " + w);

  Section hosts{"Hosts", {}, {}, {}};
  Table t;
  t.header = {"host", "role", "url", "clock skew", "verdict"};
  t.numeric = {false, false, false, true, false};
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    const FleetHost& host = r.hosts[h];
    std::string skew = kNoFigure;
    if (host.skew_seconds) {
      char text[64];
      std::snprintf(text, sizeof text, "%+.1f ms ± %.1f ms", *host.skew_seconds * 1000,
                    host.skew_uncertainty.value_or(0) * 1000);
      skew = text;
    }
    t.rows.push_back(
        {host.name, host_role_name(r.roles[h]), host.url, skew, r.verdicts[h].result.summary});
  }
  hosts.tables.push_back(std::move(t));
  doc.sections.push_back(std::move(hosts));

  Section fleet{"The fleet per phase", {}, {}, {}};
  Table f;
  f.header = {"phase", "users", "req/s (sum)", "p95", "errors"};
  f.numeric = {false, true, true, true, true};
  for (std::size_t k = 0; k < r.fleet.phases.size(); ++k) {
    const PhaseStats& p = r.fleet.phases[k];
    f.rows.push_back({p.name, p.users ? std::to_string(*p.users) : kNoFigure,
                      p.rps ? fmt_rps(*p.rps) : kNoFigure, fmt_opt(p.p95_seconds, fmt_ms),
                      fmt_opt(p.error_ratio, fmt_pct)});
    if (r.fleet.knee.phase && r.fleet.knee.phase->index == k) f.marked_row = k;
  }
  f.mark = "the fleet's throughput knee";
  fleet.tables.push_back(std::move(f));
  if (r.fleet.knee.phase) {
    fleet.lines.push_back("Throughput knee: " +
                          fmt_phase(r.fleet.knee.phase->name, r.fleet.knee.phase->users));
  } else {
    fleet.lines.push_back("Throughput knee: none (" + r.fleet.knee.reason + ")");
  }
  // A reason every phase shares is said once.
  auto note = [&](const std::string& what, std::string PhaseStats::*field) {
    std::string last;
    for (const PhaseStats& p : r.fleet.phases) {
      if ((p.*field).empty() || p.*field == last) continue;
      fleet.notes.push_back(p.name + ": " + what + " " + p.*field);
      last = p.*field;
    }
  };
  note("req/s", &PhaseStats::rps_unavailable);
  note("latency", &PhaseStats::latency_window);
  doc.sections.push_back(std::move(fleet));

  // A section per host: its role, its CPU per phase, and its targets.
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    const FleetHost& host = r.hosts[h];
    Section s{host.name + " (" + host_role_name(r.roles[h]) + ")", {}, {}, {}};
    s.lines.push_back("Verdict: " + r.verdicts[h].result.summary);
    Table ht;
    ht.header = {"phase", "req/s", "p95", "host CPU busy", "cores", "targets' CPU"};
    ht.numeric = {false, true, true, true, true, false};
    for (const PhaseStats& p : host.report.phases) {
      std::string targets;
      for (const TargetPhaseStats& tg : p.targets) {
        if (!targets.empty()) targets += ", ";
        targets += tg.name + " " + fmt_opt(tg.cpu_cores, fmt_cores);
      }
      ht.rows.push_back({p.name, p.rps ? fmt_rps(*p.rps) : kNoFigure,
                         fmt_opt(p.p95_seconds, fmt_ms), fmt_opt(p.host.cpu_busy_cores, fmt_cores),
                         p.host.cores ? std::to_string(*p.host.cores) : kNoFigure,
                         targets.empty() ? kNoFigure : targets});
    }
    ht.drop_empty_columns(1);
    s.tables.push_back(std::move(ht));
    doc.sections.push_back(std::move(s));
  }
  return doc;
}

void to_json(ojson& j, const FleetReport& r) {
  j = ojson::object();
  j["version"] = kReportVersion;
  j["summary"] = r.summary;
  j["warnings"] = r.warnings;
  ojson hosts = ojson::array();
  for (std::size_t h = 0; h < r.hosts.size(); ++h) {
    const FleetHost& host = r.hosts[h];
    ojson o = {{"name", host.name}, {"url", host.url}, {"role", host_role_name(r.roles[h])}};
    ojson skew = ojson::object();
    jf::put(skew, "seconds", host.skew_seconds);
    jf::put(skew, "uncertainty_seconds", host.skew_uncertainty);
    jf::put(skew, "unavailable", host.skew_unavailable);
    o["clock_skew"] = skew;
    ojson v = {{"summary", r.verdicts[h].result.summary}};
    jf::put(v, "phase_index", r.verdicts[h].phase);
    ojson findings = ojson::array();
    for (const Finding& f : r.verdicts[h].result.findings) {
      findings.push_back({{"check", check_name(f.check)},
                          {"subject", f.subject},
                          {"evidence", f.evidence},
                          {"value", f.value},
                          {"threshold", f.threshold}});
    }
    v["findings"] = findings;
    o["verdict"] = v;
    if (auto lh = latency_histograms(r, host); !lh.empty()) o["latency_histograms"] = lh;
    ojson report;
    to_json(report, host.report);
    o["report"] = report;
    hosts.push_back(std::move(o));
  }
  j["hosts"] = hosts;
  ojson fleet;
  to_json(fleet, r.fleet);
  j["fleet"] = fleet;
}

}  // namespace loadwatch::analysis
