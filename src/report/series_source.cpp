#include "report/series_source.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace loadwatch::report {

namespace {

using analysis::Series;

/// The series of `all` whose label `key` equals `value`.
std::vector<const Series*> with_label(const std::vector<LabeledSeries>& all, const std::string& key,
                                      const std::string& value) {
  std::vector<const Series*> out;
  for (const auto& s : all) {
    auto it = s.labels.find(key);
    if (it != s.labels.end() && it->second == value) out.push_back(&s.series);
  }
  return out;
}

/// The first series of `all` whose label `key` equals `value`, or an empty one.
Series first_with_label(const std::vector<LabeledSeries>& all, const std::string& key,
                        const std::string& value) {
  auto s = with_label(all, key, value);
  return s.empty() ? Series{} : *s.front();
}

std::set<std::string> label_values(const std::vector<LabeledSeries>& all, const std::string& key) {
  std::set<std::string> out;
  for (const auto& s : all) {
    auto it = s.labels.find(key);
    if (it != s.labels.end()) out.insert(it->second);
  }
  return out;
}

Series sum_all(const std::vector<LabeledSeries>& all) {
  std::vector<const Series*> parts;
  for (const auto& s : all) parts.push_back(&s.series);
  return sum_aligned(parts);
}

constexpr const char* kRollingLatency = "the generator's rolling quantile (Locust: its last 10 s)";
constexpr const char* kReportedLatency =
    "the generator's own quantile (Locust: the whole test so far; JMeter: its last send interval)";

/// Each generator source's counters, ages and request-duration histogram, by the source label.
template <typename Fetch>
std::vector<analysis::GeneratorSourceSeries> generator_sources(
    const std::vector<LabeledSeries>& requests, Fetch& fetch) {
  std::vector<analysis::GeneratorSourceSeries> out;
  auto failures = fetch("loadwatch_generator_failures_total", {});
  auto ages = fetch("loadwatch_generator_data_age_seconds", {});
  auto age_bounds = fetch("loadwatch_generator_data_age_uncertainty_seconds", {});
  auto users = fetch("loadwatch_generator_users", {});
  auto buckets = fetch("loadwatch_generator_request_duration_seconds_bucket", {});
  if (buckets.empty()) buckets = fetch("loadwatch_generator_request_duration_seconds", {});
  for (const std::string& name : label_values(requests, "source")) {
    analysis::GeneratorSourceSeries g;
    g.name = name;
    auto one = [&](const std::vector<LabeledSeries>& all) {
      return first_with_label(all, "source", name);
    };
    g.requests = one(requests);
    g.failures = one(failures);
    g.data_age_seconds = one(ages);
    g.data_age_uncertainty_seconds = one(age_bounds);
    g.users = one(users);
    for (const auto& b : buckets) {
      auto src = b.labels.find("source");
      auto le = b.labels.find("le");
      if (src == b.labels.end() || src->second != name || le == b.labels.end()) continue;
      double edge = le->second == "+Inf" ? INFINITY : std::strtod(le->second.c_str(), nullptr);
      if (!std::isnan(edge)) g.duration_buckets[edge] = b.series;
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

std::vector<LabeledSeries> SeriesSource::fetch_last(const std::string& family,
                                                    const std::map<std::string, std::string>& match,
                                                    double from, double to) {
  std::vector<LabeledSeries> out;
  for (auto& s : fetch(family, match, from, to)) {
    if (s.series.empty()) continue;
    LabeledSeries last{std::move(s.labels), {}};
    last.series.add(s.series.t.back(), s.series.v.back());
    out.push_back(std::move(last));
  }
  return out;
}

Series sum_aligned(const std::vector<const Series*>& parts) {
  Series out;
  if (parts.empty()) return out;
  if (parts.size() == 1) return *parts[0];
  std::map<double, std::pair<double, std::size_t>> at;  // time -> (sum, parts seen)
  for (const Series* p : parts) {
    for (std::size_t i = 0; i < p->t.size(); ++i) {
      if (std::isnan(p->v[i])) continue;
      auto& [sum, n] = at[p->t[i]];
      sum += p->v[i];
      ++n;
    }
  }
  for (const auto& [t, sn] : at) {
    if (sn.second == parts.size()) out.add(t, sn.first);
  }
  return out;
}

analysis::RunSeries load_run_series(SeriesSource& source, double from, double to,
                                    const RunSeriesOptions& options) {
  analysis::RunSeries rs;
  auto fetch = [&](const std::string& family, std::map<std::string, std::string> match = {}) {
    return source.fetch(family, match, from, to);
  };

  // Targets: CPU (user + system), RSS, fds and their limit, by the target label.
  auto cpu = fetch("loadwatch_process_cpu_seconds_total");
  auto rss = fetch("loadwatch_process_resident_memory_bytes");
  auto fds = fetch("loadwatch_process_open_fds");
  auto max_fds = fetch("loadwatch_process_max_fds");
  auto procs = fetch("loadwatch_target_processes");
  auto cpu_limit = fetch("loadwatch_process_cpu_limit_cores");
  auto nice = fetch("loadwatch_process_nice");
  auto periods = fetch("loadwatch_process_cpu_periods_total");
  auto throttled_periods = fetch("loadwatch_process_cpu_throttled_periods_total");
  auto throttled_seconds = fetch("loadwatch_process_cpu_throttled_seconds_total");
  for (const std::string& name : label_values(cpu, "target")) {
    analysis::TargetSeries t;
    t.name = name;
    t.cpu_seconds = sum_aligned(with_label(cpu, "target", name));
    auto first = [&](const std::vector<LabeledSeries>& all) {
      auto s = with_label(all, "target", name);
      return s.empty() ? Series{} : *s.front();
    };
    t.rss_bytes = first(rss);
    t.open_fds = first(fds);
    t.max_fds = first(max_fds);
    // The busiest process is only known when the target is one process: then it is the
    // target's own CPU. With more members it stays unknown rather than guessed.
    Series members = first(procs);
    bool single = !members.empty() &&
                  std::all_of(members.v.begin(), members.v.end(), [](double v) { return v <= 1; });
    if (single) t.busiest_process_cores = analysis::per_second(t.cpu_seconds);
    // The tightest limit the run saw (a quota, an affinity mask): the target is judged by it.
    for (double v : first(cpu_limit).v) {
      if (v > 0 && (!t.cpu_limit_cores || v < *t.cpu_limit_cores)) t.cpu_limit_cores = v;
    }
    t.nice = first(nice);
    t.cpu_periods = first(periods);
    t.cpu_throttled_periods = first(throttled_periods);
    t.cpu_throttled_seconds = first(throttled_seconds);
    rs.targets.push_back(std::move(t));
  }

  // Host: CPU by mode (summed over CPUs), TIME_WAIT, listen overflows, ephemeral ports.
  auto host_cpu = fetch("loadwatch_cpu_seconds_total");
  for (const std::string& mode : label_values(host_cpu, "mode")) {
    rs.host.cpu_seconds_by_mode[mode] = sum_aligned(with_label(host_cpu, "mode", mode));
  }
  for (const LabeledSeries& s : fetch("loadwatch_top_cpu_cores")) {
    auto comm = s.labels.find("comm");
    if (comm != s.labels.end()) rs.host.top_cpu_cores[comm->second] = s.series;
  }
  auto cpus = label_values(host_cpu, "cpu");
  if (!cpus.empty())
    rs.host.cores = static_cast<int>(cpus.size());
  else
    rs.host.cores = source.host_cores();
  rs.host.time_wait = sum_all(fetch("loadwatch_tcp_connections", {{"state", "time_wait"}}));
  rs.host.listen_overflows = sum_all(fetch("loadwatch_tcp_listen_overflows_total"));
  rs.host.ephemeral_port_ratio = sum_all(fetch("loadwatch_tcp_ephemeral_port_usage_ratio"));
  // The run queue, pressure stall information and swap traffic: what else held the host back.
  rs.host.procs_running = sum_all(fetch("loadwatch_procs_running"));
  rs.host.cpu_pressure_waiting = sum_all(fetch("loadwatch_pressure_cpu_waiting_seconds_total"));
  rs.host.memory_pressure_waiting =
      sum_all(fetch("loadwatch_pressure_memory_waiting_seconds_total"));
  rs.host.memory_pressure_stalled =
      sum_all(fetch("loadwatch_pressure_memory_stalled_seconds_total"));
  rs.host.io_pressure_waiting = sum_all(fetch("loadwatch_pressure_io_waiting_seconds_total"));
  rs.host.io_pressure_stalled = sum_all(fetch("loadwatch_pressure_io_stalled_seconds_total"));
  rs.host.swap_in_pages = sum_all(fetch("loadwatch_swap_in_pages_total"));
  rs.host.swap_out_pages = sum_all(fetch("loadwatch_swap_out_pages_total"));
  // A gap's length is the counter's rise at the first sample after it, over the span from the
  // sample before: that one may lie before the run (loadwatch stopped as the run began).
  constexpr double kGapLookbackSeconds = 3600;
  rs.host.sample_gap_seconds = sum_all(
      source.fetch("loadwatch_sample_gap_seconds_total", {}, from - kGapLookbackSeconds, to));

  // Generator: requests and failures summed over sources; latency from the busiest source,
  // its recent window when the generator reports one (Locust's cumulative quantiles would
  // smear every step into the ones before).
  auto requests = fetch("loadwatch_generator_requests_total");
  rs.generator.requests = sum_all(requests);
  rs.generator.failures = sum_all(fetch("loadwatch_generator_failures_total"));
  rs.generator.rps = sum_all(fetch("loadwatch_generator_requests_per_second"));
  std::optional<std::string> busiest;
  double most = -1;
  for (const auto& s : requests) {
    auto it = s.labels.find("source");
    if (it == s.labels.end() || s.series.empty()) continue;
    double n = s.series.v.back() - s.series.v.front();
    if (n > most) most = n, busiest = it->second;
  }
  std::map<std::string, std::string> by_source;
  if (busiest) by_source["source"] = *busiest;
  auto latency = fetch("loadwatch_generator_current_latency_seconds", by_source);
  bool current_latency = !latency.empty();
  if (latency.empty()) latency = fetch("loadwatch_generator_latency_seconds", by_source);
  auto quantile = [&](const char* q) {
    auto s = with_label(latency, "quantile", q);
    return s.empty() ? Series{} : *s.front();
  };
  rs.generator.p50_seconds = quantile("0.5");
  rs.generator.p95_seconds = quantile("0.95");
  rs.generator.p99_seconds = quantile("0.99");
  rs.generator.latency_window = current_latency ? kRollingLatency : kReportedLatency;
  rs.generator.sources = generator_sources(requests, fetch);
  rs.generator.clock_steps = sum_all(fetch("loadwatch_clock_steps_total"));

  rs.mock.requests = sum_all(fetch("loadwatch_mock_requests_total"));
  rs.mock.errors = sum_all(fetch("loadwatch_mock_unmatched_requests_total"));
  rs.generator_target = options.generator_target;
  // By convention a target named "generator" is the load generator itself.
  if (!rs.generator_target) {
    for (const auto& t : rs.targets) {
      if (t.name == "generator") rs.generator_target = t.name;
    }
  }
  return rs;
}

}  // namespace loadwatch::report
