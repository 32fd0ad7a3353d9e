#include "report/prometheus_fleet.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "analysis/fleet_latency.h"
#include "report/prometheus_run.h"
#include "report/run_report.h"

namespace loadwatch::report {

namespace {

/// Families the report sums over a label anyway (load_run_series): summed in PromQL, so an
/// instance answers one series per kept label value instead of one per CPU and mode.
struct Summed {
  const char* family;
  const char* by;
};
constexpr Summed kSummed[] = {
    {"loadwatch_cpu_seconds_total", "mode"},
    {"loadwatch_process_cpu_seconds_total", "target"},
};

/// The generator's request-duration histogram: 256 buckets per source, which over a run's
/// steps and 50 generators would be millions of points. A fleet's latency reads it at the
/// phases' edges instead (fleet_latency.h); each host's own report goes without it.
bool histogram_family(const std::string& family) {
  return family == "loadwatch_generator_request_duration_seconds_bucket" ||
         family == "loadwatch_generator_request_duration_seconds";
}

std::string label(const LabeledSeries& s, const char* key) {
  auto it = s.labels.find(key);
  return it == s.labels.end() ? std::string() : it->second;
}

bool has_labels(const LabeledSeries& s, const std::map<std::string, std::string>& match) {
  return std::all_of(match.begin(), match.end(), [&](const auto& kv) {
    auto it = s.labels.find(kv.first);
    return it != s.labels.end() && it->second == kv.second;
  });
}

/// The points of `s` in (from, to], and the last one at or before `from`: what a query over
/// [from, to] alone would have seen from its first step.
analysis::Series cut(const analysis::Series& s, double from, double to) {
  analysis::Series out;
  std::size_t i = 0;
  while (i + 1 < s.t.size() && s.t[i + 1] <= from) ++i;
  for (; i < s.t.size() && s.t[i] <= to; ++i) out.add(s.t[i], s.v[i]);
  return out;
}

using ByInstance = std::map<std::string, std::vector<LabeledSeries>>;

/// Each family read once over [from, to] for every instance, kept by instance.
class FleetSeries {
 public:
  FleetSeries(PrometheusSeriesSource& prometheus, double from, double to)
      : prometheus_(prometheus), from_(from), to_(to) {}

  const ByInstance& family(const std::string& family,
                           const std::map<std::string, std::string>& match) {
    std::string selector = prometheus_.selector(family, match);
    auto it = cache_.find(selector);
    if (it != cache_.end()) return it->second;
    std::string query = selector;
    for (const Summed& s : kSummed) {
      if (family == s.family) {
        query = std::string("sum by (job, instance, ") + s.by + ") (" + selector + ")";
      }
    }
    ByInstance& out = cache_[selector];
    for (auto& s : prometheus_.fetch_expression(query, from_, to_)) {
      std::string instance = label(s, "instance");
      s.labels.erase("instance");
      out[instance].push_back(std::move(s));
    }
    return out;
  }

  /// The CPUs of each instance, counted in one query: the sum over them took the cpu label.
  std::optional<int> cores(const std::string& instance) {
    if (!cores_) {
      cores_.emplace();
      auto range_ms = static_cast<long long>(std::ceil(std::max(to_ - from_, 0.001) * 1000));
      std::string query = "count by (job, instance) (count by (job, instance, cpu) (" +
                          std::string("last_over_time(") +
                          prometheus_.selector("loadwatch_cpu_seconds_total", {}) + "[" +
                          std::to_string(range_ms) + "ms])))";
      for (const auto& s : prometheus_.instant(query, to_)) {
        if (!s.series.empty()) (*cores_)[label(s, "instance")] = std::lround(s.series.v.back());
      }
    }
    auto it = cores_->find(instance);
    return it == cores_->end() ? std::nullopt : std::optional<int>(it->second);
  }

 private:
  PrometheusSeriesSource& prometheus_;
  double from_, to_;
  std::map<std::string, ByInstance> cache_;  // by the selector queried
  std::optional<std::map<std::string, int>> cores_;
};

/// One instance of the fleet as a series source: its part of each family.
class InstanceSource : public SeriesSource {
 public:
  InstanceSource(FleetSeries& fleet, std::string instance)
      : fleet_(fleet), instance_(std::move(instance)) {}

  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override {
    if (histogram_family(family)) return {};
    // The source label is the one a report matches per host (its busiest generator source):
    // it is matched here, so every host shares one query.
    auto shared = match;
    shared.erase("source");
    const ByInstance& all = fleet_.family(family, shared);
    auto it = all.find(instance_);
    std::vector<LabeledSeries> out;
    if (it == all.end()) return out;
    for (const LabeledSeries& s : it->second) {
      if (has_labels(s, match)) out.push_back({s.labels, cut(s.series, from, to)});
    }
    return out;
  }

  std::optional<int> host_cores() override { return fleet_.cores(instance_); }

 private:
  FleetSeries& fleet_;
  std::string instance_;
};

constexpr const char* kHistogramBuckets = "loadwatch_generator_request_duration_seconds_bucket";
// Each phase selects every generator's 256 buckets twice (about 0.2 s a selection for 50
// generators on a busy 2-core machine): four phases keep a query well within its timeout.
constexpr std::size_t kPhasesPerHistogramQuery = 4;
/// A batched query answers for every host at once, so it may take longer than one host's.
constexpr std::chrono::seconds kFleetQueryTimeout{30};

std::string at_time(double t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

/// The stretch of each phase the fleet's figures cover: the first generator host's stable
/// window, as the fleet report takes it. Nothing for a phase without one.
std::vector<std::optional<std::pair<double, double>>> fleet_windows(
    const std::vector<analysis::FleetHost>& hosts) {
  std::vector<std::optional<std::pair<double, double>>> out;
  for (const auto& h : hosts) {
    if (analysis::infer_role(h.report) != analysis::HostRole::generator) continue;
    for (const analysis::PhaseStats& p : h.report.phases) {
      if (p.stable_start && p.stable_seconds && *p.stable_seconds > 0) {
        out.push_back(std::make_pair(*p.stable_start, *p.stable_start + *p.stable_seconds));
      } else {
        out.push_back(std::nullopt);
      }
    }
    break;
  }
  return out;
}

/// Each generator host's request-duration histogram over each phase of the fleet: its
/// buckets' rise between the edges of the fleet's window of that phase, summed over its
/// sources, for every host at once (one query per kPhasesPerHistogramQuery phases). A bucket
/// that fell (a restart) leaves that host's phase without a histogram.
void read_phase_histograms(PrometheusSeriesSource& prometheus,
                           std::vector<analysis::FleetHost>& hosts) {
  auto windows = fleet_windows(hosts);
  const analysis::FleetHost* first = nullptr;  // the generator host whose phases those are
  for (const auto& h : hosts) {
    if (analysis::infer_role(h.report) == analysis::HostRole::generator) {
      first = &h;
      break;
    }
  }
  // instance -> phase -> le -> requests; a phase with a bucket that fell is marked bad
  std::map<std::string, std::map<std::size_t, std::map<double, double>>> rise;
  std::map<std::string, std::map<std::size_t, bool>> fell;
  std::string selector = prometheus.selector(kHistogramBuckets, {});
  for (std::size_t first = 0; first < windows.size(); first += kPhasesPerHistogramQuery) {
    std::string query;
    double latest = 0;
    for (std::size_t k = first; k < std::min(windows.size(), first + kPhasesPerHistogramQuery);
         ++k) {
      if (!windows[k]) continue;
      auto [a, b] = *windows[k];
      latest = std::max(latest, b);
      if (!query.empty()) query += " or ";
      query += "label_replace(sum by (job, instance, le) (" + selector + " @ " + at_time(b) +
               ") - sum by (job, instance, le) (" + selector + " @ " + at_time(a) +
               "), \"phase\", \"" + std::to_string(k) + "\", \"\", \"\")";
    }
    if (query.empty()) continue;
    for (const auto& s : prometheus.instant(query, latest)) {
      std::string le = label(s, "le");
      if (s.series.empty() || le.empty()) continue;
      std::size_t k = std::strtoul(label(s, "phase").c_str(), nullptr, 10);
      double edge = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
      double n = s.series.v.back();
      std::string instance = label(s, "instance");
      if (n < 0) fell[instance][k] = true;
      if (!std::isnan(edge)) rise[instance][k][edge] = n;
    }
  }
  for (auto& h : hosts) {
    if (analysis::infer_role(h.report) != analysis::HostRole::generator) continue;
    auto it = rise.find(h.name);
    if (it == rise.end()) {
      h.histogram_unavailable = "Prometheus holds no " + std::string(kHistogramBuckets) +
                                " for it (the Locust listener exports one)";
      continue;
    }
    h.phase_histograms.assign(windows.size(), {});
    // Why a phase has none: its buckets missing at an edge (not yet scraped: a generator that
    // started pushing within the window), or one fell (a restart).
    h.phase_histogram_unavailable.assign(
        windows.size(), "Prometheus holds none of its buckets at one edge of the phase's window");
    h.histogram_window =
        "each one's buckets as Prometheus last scraped them at or before the edges of the "
        "fleet's stable window";
    bool filled = false;
    for (const auto& [k, buckets] : it->second) {
      if (k >= windows.size()) continue;
      if (fell[h.name][k]) {
        h.phase_histogram_unavailable[k] = "a bucket fell within the window (a restart)";
        continue;
      }
      h.phase_histogram_unavailable[k].clear();
      for (const auto& [le, n] : buckets) h.phase_histograms[k].push_back({le, n});
      // The host's own latency, which its report read without the histogram, from the same
      // buckets: its verdict's latency checks need it.
      // Its own phase that is the first generator host's phase k: a host that lacks a phase
      // must not have another phase's latency filled in.
      auto j = first && k < first->report.phases.size()
                   ? analysis::match_phase(*first, first->report.phases[k], h)
                   : std::nullopt;
      if (j) {
        analysis::PhaseStats& p = h.report.phases[*j];
        if (!p.p50_seconds && !p.p95_seconds && !p.p99_seconds) {
          filled |=
              analysis::merge_host_histograms(p, {&h.phase_histograms[k]}, h.histogram_window);
        }
      }
    }
    if (filled) analysis::analyse(h.report);  // its knees and bottleneck with the latency
  }
}

}  // namespace

std::vector<analysis::FleetHost> prometheus_fleet_hosts(const PrometheusSourceOptions& options,
                                                        const std::vector<std::string>& instances,
                                                        const Run& found, double now,
                                                        const RunSeriesOptions& run_options) {
  PrometheusSourceOptions all = options;
  all.instance.clear();
  all.timeout = std::max<std::chrono::milliseconds>(all.timeout, kFleetQueryTimeout);
  PrometheusSeriesSource prometheus(all);
  std::map<std::string, Run> runs = runs_by_instance(prometheus, found, now);
  double from = now, to = found.start;
  for (const std::string& instance : instances) {
    auto it = runs.find(instance);
    if (it == runs.end()) {
      throw SeriesSourceError(instance + " exported run " + found.id + " but not its start");
    }
    from = std::min(from, it->second.start);
    to = std::max(to, report_end(it->second, now));  // each host's report reads that far
  }
  FleetSeries fleet(prometheus, from, to);
  std::vector<analysis::FleetHost> hosts;
  for (const std::string& instance : instances) {
    InstanceSource source(fleet, instance);
    analysis::FleetHost h;
    h.name = instance;
    h.url = options.url;
    h.skew_unavailable =
        "read from Prometheus: each loadwatch's samples and phases carry its own clock";
    h.report = report_for_run(runs[instance], source, now, run_options);
    hosts.push_back(std::move(h));
  }
  read_phase_histograms(prometheus, hosts);
  return hosts;
}

}  // namespace loadwatch::report
