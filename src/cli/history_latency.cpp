#include "cli/history_latency.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "report/prometheus_series_source.h"
#include "sources/generator_families.h"
#include "util/bounded_json.h"

namespace loadwatch::report {

namespace {

constexpr const char* kBuckets = "loadwatch_generator_request_duration_seconds_bucket";
constexpr const char* kAge = "loadwatch_generator_data_age_seconds";
// One request's series: the history takes at most 100 names, and a request's head 16 KiB.
constexpr std::size_t kNamesPerRequest = 100;
constexpr std::size_t kSeriesBytesPerRequest = 12 * 1024;
// An edge's value is the last sample at or before it, looked for this many samples back.
constexpr double kLookbackSamples = 5;
// The history answers on two threads of its own and asks a third reader to come back (503).
constexpr int kBusyRetries = 5;

/// What a loadwatch's history keeps of one generator source's histogram.
struct SourceKeys {
  std::map<double, std::string> buckets;  // le -> series key
  std::string age;                        // its data age's key, when kept
};

/// The series' values at one instant: key -> (sample time, value).
using ValuesAt = std::map<std::string, std::pair<double, double>>;

std::string fixed(double t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

std::string label_of(const nlohmann::json& labels, const char* key) {
  return labels.is_object() ? json_string_or(labels, key) : std::string();
}

/// GET `path`, asking again while the history's readers are busy (503). Throws
/// std::runtime_error with the reason when there is no 200.
std::string get(const RunClient& client, const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    RunAnswer a = client.get(path);
    if (!a.reached) throw std::runtime_error(a.error);
    if (a.status == 200) return a.body;
    if (a.status == 503 && attempt < kBusyRetries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt + 1)));
      continue;
    }
    if (a.status == 404) throw std::runtime_error("its history is off (--history.points=0)");
    throw std::runtime_error("its history answered HTTP " + std::to_string(a.status));
  }
}

/// Each source's bucket and age keys from GET /api/v1/history/series, and the sample interval.
std::map<std::string, SourceKeys> kept_sources(const RunClient& client, double* interval) {
  nlohmann::json list = parse_bounded_json(get(client, "/api/v1/history/series"));
  *interval = json_number_or(list, "interval_seconds", 1);
  if (!(*interval > 0) || !std::isfinite(*interval)) *interval = 1;
  std::map<std::string, SourceKeys> out;
  for (const auto& s : json_array_or_empty(list, "data")) {
    std::string family = json_string_or(s, "family");
    if (family != kBuckets && family != kAge) continue;
    const nlohmann::json& labels = json_object_or_empty(s, "labels");
    std::string source = label_of(labels, "source"), key = json_string_or(s, "series");
    if (family == kAge) {
      out[source].age = key;
      continue;
    }
    std::string le = label_of(labels, "le");
    double edge = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
    if (!le.empty() && !std::isnan(edge)) out[source].buckets[edge] = key;
  }
  for (auto it = out.begin(); it != out.end();) {
    it = it->second.buckets.empty() ? out.erase(it) : std::next(it);
  }
  return out;
}

/// The series parameter of each request: at most kNamesPerRequest names and about
/// kSeriesBytesPerRequest bytes once encoded.
std::vector<std::string> batches(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  std::string cur;
  std::size_t names = 0;
  for (const std::string& k : keys) {
    std::string enc = url_encode(k);
    if (names > 0 &&
        (names == kNamesPerRequest || cur.size() + 3 + enc.size() > kSeriesBytesPerRequest)) {
      out.push_back(cur);
      cur.clear();
      names = 0;
    }
    cur += (names ? "%2C" : "") + enc;
    ++names;
  }
  if (names) out.push_back(cur);
  return out;
}

/// Every series' last value at or before `at` (within `look` seconds), on the host's clock.
ValuesAt values_at(const RunClient& client, const std::vector<std::string>& requests, double at,
                   double look) {
  ValuesAt out;
  for (const std::string& series : requests) {
    HistoryAnswer a =
        parse_history_answer(get(client, "/api/v1/history?series=" + series +
                                             "&since=" + fixed(at - look) + "&until=" + fixed(at)));
    for (std::size_t c = 0; c < a.series.size(); ++c) {
      if (auto v = last_at_or_before(a, c, at)) out[a.series[c]] = *v;
    }
  }
  return out;
}

/// One host's histogram between two edges, summed over its sources; false with `why`.
bool histogram_between(const std::map<std::string, SourceKeys>& sources, const ValuesAt& from,
                       const ValuesAt& to, std::vector<analysis::HistogramBucket>& out,
                       std::optional<std::pair<double, double>>& span, std::string& why) {
  std::map<double, double> sum;
  bool timed = true;
  double earliest = INFINITY, latest = -INFINITY;
  for (const auto& [source, keys] : sources) {
    double a_time = 0, b_time = 0;
    for (const auto& [le, key] : keys.buckets) {
      auto a = from.find(key), b = to.find(key);
      if (a == from.end() || b == to.end()) {
        why = "no sample of source " + source + "'s buckets shortly before the window's " +
              (a == from.end() ? "start" : "end") +
              " (its history no longer reaches back so far, or the source was not yet seen)";
        return false;
      }
      if (b->second.second < a->second.second) {
        why = "source " + source + "'s buckets fell within the window (the generator restarted)";
        return false;
      }
      sum[le] += b->second.second - a->second.second;
      a_time = std::max(a_time, a->second.first);
      b_time = std::max(b_time, b->second.first);
    }
    // The moments the counts describe: each sample's time less the data's age then.
    auto age_a = keys.age.empty() ? from.end() : from.find(keys.age);
    auto age_b = keys.age.empty() ? to.end() : to.find(keys.age);
    if (age_a == from.end() || age_b == to.end()) {
      timed = false;
      continue;
    }
    earliest = std::min(earliest, a_time - age_a->second.second);
    latest = std::max(latest, b_time - age_b->second.second);
  }
  out.clear();
  for (const auto& [le, n] : sum) out.push_back({le, n});
  if (timed) span = std::make_pair(earliest, latest);
  return true;
}

/// Host `h`'s histograms over `windows` (on the first generator host's clock; `offset` moves
/// them to h's).
void read_host(analysis::FleetHost& h, const RunClient& client,
               const std::vector<std::optional<std::pair<double, double>>>& windows,
               double offset) {
  std::map<std::string, SourceKeys> sources;
  double interval = 1;
  try {
    sources = kept_sources(client, &interval);
  } catch (const std::exception& e) {
    h.histogram_unavailable = std::string("its history's series could not be listed: ") + e.what();
    return;
  }
  if (sources.empty()) {
    h.histogram_unavailable =
        "its history holds no " + std::string(kBuckets) +
        ": its generator reports quantiles, not a histogram (the Locust listener sends one)";
    return;
  }
  const std::size_t expected = request_duration_bounds().size() + 1;
  std::vector<std::string> keys;
  for (const auto& [source, k] : sources) {
    if (k.buckets.size() < expected || !std::isinf(k.buckets.rbegin()->first)) {
      h.histogram_unavailable = "its history keeps " + std::to_string(k.buckets.size()) +
                                " of source " + source + "'s " + std::to_string(expected) +
                                " buckets (it records at most --history.max-series series)";
      return;
    }
    for (const auto& [le, key] : k.buckets) keys.push_back(key);
    if (!k.age.empty()) keys.push_back(k.age);
  }
  const std::vector<std::string> requests = batches(keys);
  const double look = kLookbackSamples * interval;
  h.histogram_window =
      "each one's buckets at the last sample of its history at or before each edge of the "
      "fleet's stable window (moved to its clock by the measured skews)";
  h.phase_histograms.assign(windows.size(), {});
  h.histogram_spans.assign(windows.size(), std::nullopt);
  h.phase_histogram_unavailable.assign(windows.size(), {});
  for (std::size_t k = 0; k < windows.size(); ++k) {
    if (!windows[k]) {
      h.phase_histogram_unavailable[k] = "the phase has no stable window";
      continue;
    }
    try {
      ValuesAt a = values_at(client, requests, windows[k]->first + offset, look);
      ValuesAt b = values_at(client, requests, windows[k]->second + offset, look);
      histogram_between(sources, a, b, h.phase_histograms[k], h.histogram_spans[k],
                        h.phase_histogram_unavailable[k]);
    } catch (const std::exception& e) {
      h.phase_histograms[k].clear();
      h.phase_histogram_unavailable[k] = std::string("its history: ") + e.what();
    }
  }
}

}  // namespace

HistoryAnswer parse_history_answer(const std::string& body) {
  nlohmann::json j = parse_bounded_json(body);
  if (json_string_or(j, "status") != "success") {
    throw std::runtime_error("not a history answer: " + json_string_or(j, "error", "no status"));
  }
  const auto& names = json_array_or_empty(j, "series");
  const auto& data = json_array_or_empty(j, "data");
  if (names.size() != data.size() || data.empty()) {
    throw std::runtime_error("not a history answer: series and data differ");
  }
  HistoryAnswer out;
  for (std::size_t c = 0; c < data.size(); ++c) {
    if (!data[c].is_array() || !names[c].is_string() ||
        (c > 0 && data[c].size() != data[0].size())) {
      throw std::runtime_error("not a history answer: column " + std::to_string(c));
    }
    std::vector<double> column;
    column.reserve(data[c].size());
    for (const auto& v : data[c]) {
      if (!v.is_null() && !v.is_number()) {
        throw std::runtime_error("not a history answer: a value is not a number");
      }
      column.push_back(v.is_null() ? NAN : v.get<double>());
    }
    if (c == 0) {
      out.time = std::move(column);
    } else {
      out.series.push_back(names[c].get<std::string>());
      out.values.push_back(std::move(column));
    }
  }
  return out;
}

std::optional<std::pair<double, double>> last_at_or_before(const HistoryAnswer& answer,
                                                           std::size_t column, double at) {
  if (column >= answer.values.size()) return std::nullopt;
  const auto& v = answer.values[column];
  for (std::size_t i = answer.time.size(); i-- > 0;) {
    if (answer.time[i] > at || std::isnan(v[i])) continue;
    return std::make_pair(answer.time[i], v[i]);
  }
  return std::nullopt;
}

void read_history_histograms(std::vector<analysis::FleetHost>& hosts,
                             const std::vector<const RunClient*>& clients) {
  std::vector<std::size_t> generators;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (analysis::infer_role(hosts[h].report) == analysis::HostRole::generator) {
      generators.push_back(h);
    }
  }
  // One generator host's own quantiles stand as they are: nothing to merge.
  if (generators.size() < 2) return;
  // The fleet's stable window of each phase: the first generator host's, as the fleet report
  // takes it, on that host's clock.
  const analysis::FleetHost& first = hosts[generators[0]];
  std::vector<std::optional<std::pair<double, double>>> windows;
  for (const analysis::PhaseStats& p : first.report.phases) {
    if (p.stable_start && p.stable_seconds && *p.stable_seconds > 0) {
      windows.push_back(std::make_pair(*p.stable_start, *p.stable_start + *p.stable_seconds));
    } else {
      windows.push_back(std::nullopt);
    }
  }
  const double first_skew = first.skew_seconds.value_or(0);
  for (std::size_t g : generators) {
    read_host(hosts[g], *clients[g], windows, hosts[g].skew_seconds.value_or(0) - first_skew);
  }
}

}  // namespace loadwatch::report
