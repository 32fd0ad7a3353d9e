#include "source_locust.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace loadwatch {

namespace {

using nlohmann::json;

std::optional<double> number(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> parse_quantile(std::string_view text) {
  double q = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), q);
  if (ec != std::errc() || p != text.data() + text.size() || !(q > 0 && q <= 1)) {
    return std::nullopt;
  }
  return q;
}

// Sets quantile q to v; `strong` values (response_time_percentile_*) win over the older
// spellings of the same quantile when a version writes both.
void put(std::vector<std::pair<double, double>>& qs, std::vector<bool>& strong, double q, double v,
         bool is_strong) {
  for (size_t i = 0; i < qs.size(); ++i) {
    if (qs[i].first == q) {
      if (is_strong || !strong[i]) {
        qs[i].second = v;
        strong[i] = strong[i] || is_strong;
      }
      return;
    }
  }
  qs.emplace_back(q, v);
  strong.push_back(is_strong);
}

void sort_quantiles(std::vector<std::pair<double, double>>& qs) {
  std::sort(qs.begin(), qs.end());
}

constexpr std::string_view kPercentilePrefix = "response_time_percentile_";

bool parse_row(const json& row, LocustRow& out) {
  auto name = row.find("name");
  if (name == row.end() || !name->is_string()) return false;
  out.name = name->get<std::string>();
  if (auto m = row.find("method"); m != row.end() && m->is_string()) out.method = m->get<std::string>();
  out.requests = number(row, "num_requests").value_or(0);
  out.failures = number(row, "num_failures").value_or(0);
  out.avg_ms = number(row, "avg_response_time");
  std::vector<bool> strong;
  for (auto it = row.begin(); it != row.end(); ++it) {
    if (!it.value().is_number()) continue;  // null while an endpoint has no requests
    double v = it.value().get<double>();
    if (!std::isfinite(v)) continue;
    const std::string& key = it.key();
    if (key == "median_response_time") {
      put(out.quantiles_ms, strong, 0.5, v, false);
    } else if (key == "ninetieth_response_time") {
      put(out.quantiles_ms, strong, 0.9, v, false);
    } else if (key == "ninety_ninth_response_time") {
      put(out.quantiles_ms, strong, 0.99, v, false);
    } else if (key.rfind(kPercentilePrefix, 0) == 0) {
      if (auto q = parse_quantile(std::string_view(key).substr(kPercentilePrefix.size()))) {
        put(out.quantiles_ms, strong, *q, v, true);
      }
    }
  }
  sort_quantiles(out.quantiles_ms);
  return true;
}

void parse_current(const json& doc, LocustStats& out) {
  std::vector<bool> strong;
  constexpr std::string_view prefix = "current_response_time_percentile_";
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    if (key.rfind(prefix, 0) != 0 || !it.value().is_number()) continue;
    double v = it.value().get<double>();
    if (!std::isfinite(v)) continue;
    std::string_view suffix = std::string_view(key).substr(prefix.size());
    int n = 0;
    auto [p, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), n);
    if (ec != std::errc() || p != suffix.data() + suffix.size()) continue;
    // 2.15-2.20 number them by position in PERCENTILES_TO_CHART, default [0.5, 0.95];
    // 2.12 writes the percentile itself (_95, _50).
    if (n <= 0 || n > 100) continue;
    double q = n == 1 ? 0.5 : n == 2 ? 0.95 : n / 100.0;
    put(out.current_quantiles_ms, strong, q, v, false);
  }
  if (auto cur = doc.find("current_response_time_percentiles"); cur != doc.end() && cur->is_object()) {
    for (auto it = cur->begin(); it != cur->end(); ++it) {
      const std::string& key = it.key();
      if (key.rfind(kPercentilePrefix, 0) != 0 || !it.value().is_number()) continue;
      double v = it.value().get<double>();
      if (!std::isfinite(v)) continue;
      if (auto q = parse_quantile(std::string_view(key).substr(kPercentilePrefix.size()))) {
        put(out.current_quantiles_ms, strong, *q, v, true);
      }
    }
  }
  sort_quantiles(out.current_quantiles_ms);
}

}  // namespace

bool parse_locust_stats(std::string_view text, LocustStats& out, std::string& error) {
  out = LocustStats{};
  auto doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) {
    error = "/stats/requests: not JSON";
    return false;
  }
  if (!doc.is_object() || !doc.contains("stats") || !doc["stats"].is_array()) {
    error = "/stats/requests: no \"stats\" list";
    return false;
  }
  for (const auto& row : doc["stats"]) {
    if (!row.is_object()) continue;
    LocustRow r;
    if (!parse_row(row, r)) continue;
    // The aggregate row is Locust's stats.total, named "Aggregated" (its method is ""/null);
    // it feeds the aggregate metrics, never a name="Aggregated" label.
    if (r.name == "Aggregated" && r.method.empty()) {
      out.aggregated = std::move(r);
    } else {
      out.endpoints.push_back(std::move(r));
    }
  }
  out.user_count = number(doc, "user_count");
  out.total_rps = number(doc, "total_rps");
  if (auto s = doc.find("state"); s != doc.end() && s->is_string()) out.state = s->get<std::string>();
  if (auto wc = number(doc, "worker_count")) {
    out.workers = wc;
  } else if (auto w = doc.find("workers"); w != doc.end() && w->is_array()) {
    double n = 0;
    for (const auto& worker : *w) {
      bool missing = worker.is_object() && worker.contains("state") &&
                     worker["state"].is_string() && worker["state"].get<std::string>() == "missing";
      if (!missing) n += 1;
    }
    out.workers = n;
  }
  parse_current(doc, out);
  return true;
}

namespace {

const char* const kHelpRequests = "Requests the load generator made in the whole test.";
const char* const kHelpFailures = "Requests of the load generator that failed, whole test.";
const char* const kHelpEpRequests = "Requests the load generator made, per request name and method.";
const char* const kHelpEpFailures = "Failed requests of the load generator, per request name and method.";
const char* const kHelpLatency =
    "Response time of all requests: quantiles over the whole test as the load generator "
    "reports them; _count and _sum over the whole test.";
const char* const kHelpEpLatency =
    "Response time per request name and method: quantiles over the whole test as reported; "
    "_count and _sum over the whole test.";
const char* const kHelpCurrent =
    "Response time of all requests: quantiles over the generator's recent window (Locust: "
    "10 s) as reported; _count and _sum over the whole test.";
const char* const kHelpUsers = "Simulated users the load generator runs.";
const char* const kHelpRps = "Requests per second, as the load generator reports it.";
const char* const kHelpRunning = "1 while the load generator is spawning or running a test.";
const char* const kHelpWorkers = "Workers connected to the load generator's master.";

bool running_state(const std::string& s) { return s == "spawning" || s == "running"; }

}  // namespace

void LocustMapper::map(const LocustStats& stats, const std::string& source, MetricSink& out) {
  bool new_run = (last_state_ == "stopped" || last_state_ == "ready") && running_state(stats.state);
  bool went_down = stats.aggregated && (stats.aggregated->requests < last_requests_ ||
                                        stats.aggregated->failures < last_failures_);
  if (new_run || went_down) carry_.reset_all();
  if (!stats.state.empty()) last_state_ = stats.state;
  if (stats.aggregated) {
    last_requests_ = stats.aggregated->requests;
    last_failures_ = stats.aggregated->failures;
  }

  // Counters of one row: requests, failures, and the response time sum (for summaries).
  struct Totals {
    double requests, failures, sum_seconds;
  };
  std::string key;
  auto totals = [&](const LocustRow& row, char tag) {
    key.assign(1, tag).append("\x1f").append(row.name).append("\x1f").append(row.method);
    Totals t{};
    t.requests = carry_.update(key, row.requests);
    key[0] = char(tag + 1);
    t.failures = carry_.update(key, row.failures);
    key[0] = char(tag + 2);
    // avg × count reproduces Locust's total_response_time up to float rounding.
    t.sum_seconds = carry_.update(key, row.avg_ms.value_or(0) * row.requests / 1000.0, 1e-9);
    return t;
  };
  auto summary = [&](const char* name, const char* help, Labels labels,
                     const std::vector<std::pair<double, double>>& quantiles_ms, const Totals& t) {
    auto& m = out.add(name, help, prometheus::MetricType::Summary, std::move(labels));
    m.summary.sample_count = t.requests >= 1.8e19 ? UINT64_MAX : std::uint64_t(t.requests);
    m.summary.sample_sum = t.sum_seconds;
    for (const auto& [q, ms] : quantiles_ms) m.summary.quantile.push_back({q, ms / 1000.0});
  };

  std::optional<Totals> all;
  if (const auto& agg = stats.aggregated) {
    all = totals(*agg, 'A');
    out.counter("loadwatch_generator_requests_total", kHelpRequests, {{"source", source}},
                all->requests);
    out.counter("loadwatch_generator_failures_total", kHelpFailures, {{"source", source}},
                all->failures);
    summary("loadwatch_generator_latency_seconds", kHelpLatency, {{"source", source}},
            agg->quantiles_ms, *all);
    if (!stats.current_quantiles_ms.empty()) {
      summary("loadwatch_generator_current_latency_seconds", kHelpCurrent, {{"source", source}},
              stats.current_quantiles_ms, *all);
    }
  }
  for (const auto& ep : stats.endpoints) {
    Totals t = totals(ep, 'a');
    Labels labels{{"source", source}, {"name", ep.name}, {"method", ep.method}};
    out.counter("loadwatch_generator_endpoint_requests_total", kHelpEpRequests, labels, t.requests);
    out.counter("loadwatch_generator_endpoint_failures_total", kHelpEpFailures, labels, t.failures);
    summary("loadwatch_generator_endpoint_latency_seconds", kHelpEpLatency, std::move(labels),
            ep.quantiles_ms, t);
  }
  if (stats.user_count) {
    out.gauge("loadwatch_generator_users", kHelpUsers, {{"source", source}}, *stats.user_count);
  }
  if (stats.total_rps) {
    out.gauge("loadwatch_generator_requests_per_second", kHelpRps, {{"source", source}},
              *stats.total_rps);
  }
  if (!stats.state.empty()) {
    out.gauge("loadwatch_generator_running", kHelpRunning, {{"source", source}},
              running_state(stats.state) ? 1 : 0);
  }
  if (stats.workers) {
    out.gauge("loadwatch_generator_workers", kHelpWorkers, {{"source", source}}, *stats.workers);
  }
}

namespace {

class LocustScraper : public SourceScraper {
 public:
  std::vector<SourceRequest> requests(const SourceConfig& config) const override {
    return {{config.url + "/stats/requests", "application/json", false}};
  }

  ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) override {
    ScrapeResult result;
    if (answers.empty()) return result;
    LocustStats stats;
    std::string error;
    if (!parse_locust_stats(answers[0].body, stats, error)) {
      result.error = FetchError::Parse;
      result.message = config.url + error;
      return result;
    }
    MetricSink sink;
    mapper_.map(stats, config.name, sink);
    mapper_.end_scrape(config.max_series * 4);
    result.families = sink.take();
    return result;
  }

 private:
  LocustMapper mapper_;
};

}  // namespace

std::unique_ptr<SourceScraper> make_locust_scraper() { return std::make_unique<LocustScraper>(); }

}  // namespace loadwatch
