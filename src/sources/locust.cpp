#include "sources/locust.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <unordered_map>

#include "sources/generator_families.h"
#include "sources/json_events.h"
#include "sources/locust_csv.h"
#include "util/unix_time.h"

namespace loadwatch {

namespace {

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
// At most kMaxQuantilesPerSeries quantiles, so a row of 100,000 percentile keys stays linear;
// false for one past the cap.
bool put(std::vector<std::pair<double, double>>& qs, std::vector<bool>& strong, double q, double v,
         bool is_strong) {
  for (size_t i = 0; i < qs.size(); ++i) {
    if (qs[i].first == q) {
      if (is_strong || !strong[i]) {
        qs[i].second = v;
        strong[i] = strong[i] || is_strong;
      }
      return true;
    }
  }
  if (qs.size() >= kMaxQuantilesPerSeries) return false;
  qs.emplace_back(q, v);
  strong.push_back(is_strong);
  return true;
}

constexpr std::string_view kPercentilePrefix = "response_time_percentile_";
constexpr std::string_view kCurrentPrefix = "current_response_time_percentile_";

// An event handler instead of a DOM: a 500-endpoint body is ~300 KB, and nlohmann's DOM
// (a std::map and strings per row) took most of the 5 ms budget. It reads only the keys
// loadwatch exports and keeps a small stack of where it is.
class StatsHandler : public JsonHandler {
 public:
  StatsHandler(LocustStats& out, std::size_t max_rows) : out_(out), max_rows_(max_rows) {}

  bool null() override { return scalar(Scalar{}); }
  bool boolean(bool) override { return scalar(Scalar{}); }
  bool number(double v) override {
    Scalar s;
    s.is_number = std::isfinite(v);
    s.value = v;
    return scalar(s);
  }
  bool string(std::string_view v) override {
    Scalar s;
    s.is_string = true;
    s.text = v;
    return scalar(s);
  }

  bool key(std::string_view k) override {
    key_.assign(k);
    return true;
  }

  bool begin_object() override {
    Role role = Role::Other;
    if (stack_.empty()) {
      role = Role::Root;
      root_is_object_ = true;
    } else if (top() == Role::Root && key_ == "current_response_time_percentiles") {
      role = Role::Current;
    } else if (top() == Role::Stats) {
      role = Role::Row;
      row_ = LocustRow{};
      row_named_ = false;
      row_too_long_ = false;
      row_strong_.clear();
    } else if (top() == Role::Workers) {
      role = Role::Worker;  // counted at its end unless its state is "missing"
      worker_missing_ = false;
    }
    stack_.push_back(role);
    return true;
  }

  bool end_object() override {
    Role role = top();
    stack_.pop_back();
    bool is_aggregate = row_.name == "Aggregated" && row_.method.empty();
    if (role == Role::Row && row_named_ && row_too_long_) {
      count_drop(out_.dropped, drop_reason::kLabelLimit);
    } else if (role == Role::Row && row_named_ && !is_aggregate &&
               out_.endpoints.size() >= max_rows_) {
      count_drop(out_.dropped, drop_reason::kMaxSeries);
    } else if (role == Role::Row && row_named_) {
      std::sort(row_.quantiles_ms.begin(), row_.quantiles_ms.end());
      // The aggregate row is Locust's stats.total, named "Aggregated" (its method is
      // ""/null); it feeds the aggregate metrics, never a name="Aggregated" label.
      if (row_.name == "Aggregated" && row_.method.empty()) {
        out_.aggregated = std::move(row_);
      } else {
        out_.endpoints.push_back(std::move(row_));
      }
    } else if (role == Role::Worker && !worker_missing_) {
      workers_ += 1;
    }
    return true;
  }

  bool begin_array() override {
    Role role = Role::Other;
    if (top() == Role::Root && key_ == "stats") {
      role = Role::Stats;
      saw_stats_ = true;
      out_.endpoints.clear();  // a repeated key replaces, as in a DOM
      out_.aggregated.reset();
    } else if (top() == Role::Root && key_ == "workers") {
      role = Role::Workers;
      has_workers_ = true;
      workers_ = 0;
    } else if (top() == Role::Workers) {
      workers_ += 1;  // not a worker object: counted, as it is not "missing"
    }
    stack_.push_back(role);
    return true;
  }

  bool end_array() override {
    stack_.pop_back();
    return true;
  }

  /// After a successful parse: false unless the body was an object with a "stats" list.
  bool finish() {
    if (!root_is_object_ || !saw_stats_) return false;
    if (!worker_count_ && has_workers_) out_.workers = workers_;
    if (worker_count_) out_.workers = worker_count_;
    std::sort(out_.current_quantiles_ms.begin(), out_.current_quantiles_ms.end());
    return true;
  }

 private:
  enum class Role { Root, Stats, Row, Current, Workers, Worker, Other };
  struct Scalar {
    bool is_number = false;
    bool is_string = false;
    double value = 0;
    std::string_view text;
  };

  Role top() const { return stack_.empty() ? Role::Other : stack_.back(); }

  bool scalar(const Scalar& s) {
    switch (top()) {
      case Role::Root:
        root_value(s);
        break;
      case Role::Row:
        row_value(s);
        break;
      case Role::Current:
        current_value(s);
        break;
      case Role::Worker:
        if (key_ == "state") worker_missing_ = s.is_string && s.text == "missing";
        break;
      case Role::Workers:
        workers_ += 1;
        break;
      default:
        break;  // a bare scalar document: finish() rejects it
    }
    return true;
  }

  static std::optional<double> opt(const Scalar& s) {
    return s.is_number ? std::optional<double>(s.value) : std::nullopt;
  }

  void root_value(const Scalar& s) {
    if (key_ == "user_count") {
      out_.user_count = opt(s);
    } else if (key_ == "total_rps") {
      out_.total_rps = opt(s);
    } else if (key_ == "worker_count") {
      worker_count_ = opt(s);
    } else if (key_ == "state") {
      out_.state = s.is_string ? std::string(s.text) : std::string();
    } else if (s.is_number && key_.rfind(kCurrentPrefix, 0) == 0) {
      std::string_view suffix = std::string_view(key_).substr(kCurrentPrefix.size());
      int n = 0;
      auto [p, ec] = std::from_chars(suffix.data(), suffix.data() + suffix.size(), n);
      if (ec != std::errc() || p != suffix.data() + suffix.size() || n <= 0 || n > 100) return;
      // 2.15-2.20 number them by position in PERCENTILES_TO_CHART, default [0.5, 0.95];
      // 2.12 writes the percentile itself (_95, _50).
      double q = n == 1 ? 0.5 : n == 2 ? 0.95 : n / 100.0;
      quantile(put(out_.current_quantiles_ms, current_strong_, q, s.value, false));
    }
  }

  void current_value(const Scalar& s) {
    if (!s.is_number || key_.rfind(kPercentilePrefix, 0) != 0) return;
    if (auto q = parse_quantile(std::string_view(key_).substr(kPercentilePrefix.size()))) {
      quantile(put(out_.current_quantiles_ms, current_strong_, *q, s.value, true));
    }
  }

  void row_value(const Scalar& s) {
    const std::string& k = key_;
    if (k == "name") {
      row_named_ = s.is_string;
      // A name or method past the label cap drops the row; it is not copied.
      row_too_long_ = row_too_long_ || s.text.size() > kMaxLabelValueBytes;
      if (!row_too_long_) row_.name.assign(s.text);
    } else if (k == "method") {
      row_too_long_ = row_too_long_ || s.text.size() > kMaxLabelValueBytes;
      if (!row_too_long_) row_.method.assign(s.text);  // "" for null
    } else if (k == "num_requests") {
      row_.requests = s.is_number ? s.value : 0;
    } else if (k == "num_failures") {
      row_.failures = s.is_number ? s.value : 0;
    } else if (k == "avg_response_time") {
      row_.avg_ms = opt(s);
    } else if (!s.is_number) {
      return;  // a null percentile: the endpoint has no requests yet
    } else if (k == "median_response_time") {
      quantile(put(row_.quantiles_ms, row_strong_, 0.5, s.value, false));
    } else if (k == "ninetieth_response_time") {
      quantile(put(row_.quantiles_ms, row_strong_, 0.9, s.value, false));
    } else if (k == "ninety_ninth_response_time") {
      quantile(put(row_.quantiles_ms, row_strong_, 0.99, s.value, false));
    } else if (k.rfind(kPercentilePrefix, 0) == 0) {
      if (auto q = parse_quantile(std::string_view(k).substr(kPercentilePrefix.size()))) {
        quantile(put(row_.quantiles_ms, row_strong_, *q, s.value, true));
      }
    }
  }

  void quantile(bool kept) {
    if (!kept) count_drop(out_.dropped, drop_reason::kMaxQuantiles);
  }

  LocustStats& out_;
  std::size_t max_rows_;
  bool row_too_long_ = false;
  std::vector<Role> stack_;
  std::string key_;
  bool root_is_object_ = false;
  bool saw_stats_ = false;
  LocustRow row_;
  bool row_named_ = false;
  std::vector<bool> row_strong_;
  std::vector<bool> current_strong_;
  bool worker_missing_ = false;
  bool has_workers_ = false;
  double workers_ = 0;
  std::optional<double> worker_count_;
};

}  // namespace

bool parse_locust_stats(std::string_view text, LocustStats& out, std::string& error,
                        std::size_t max_rows) {
  out = LocustStats{};
  StatsHandler handler(out, max_rows);
  std::string why;
  if (!read_json_events(text, handler, why)) {
    out = LocustStats{};
    error = "/stats/requests: not JSON (" + why + ")";
    return false;
  }
  if (!handler.finish()) {
    out = LocustStats{};
    error = "/stats/requests: no \"stats\" list";
    return false;
  }
  return true;
}

namespace {

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
  auto summary = [&](GeneratorFamily family, Labels labels,
                     const std::vector<std::pair<double, double>>& quantiles_ms, const Totals& t) {
    auto& m = add_generator_summary(out, family, std::move(labels), t.requests, t.sum_seconds);
    for (const auto& [q, ms] : quantiles_ms) m.summary.quantile.push_back({q, ms / 1000.0});
  };
  using F = GeneratorFamily;

  std::optional<Totals> all;
  if (const auto& agg = stats.aggregated) {
    all = totals(*agg, 'A');
    add_generator_sample(out, F::kRequests, {{"source", source}}, all->requests);
    add_generator_sample(out, F::kFailures, {{"source", source}}, all->failures);
    summary(F::kLatency, {{"source", source}}, agg->quantiles_ms, *all);
    if (!stats.current_quantiles_ms.empty()) {
      summary(F::kCurrentLatency, {{"source", source}}, stats.current_quantiles_ms, *all);
    }
  }
  for (const auto& ep : stats.endpoints) {
    Totals t = totals(ep, 'a');
    Labels labels{{"source", source}, {"name", ep.name}, {"method", ep.method}};
    add_generator_sample(out, F::kEndpointRequests, labels, t.requests);
    add_generator_sample(out, F::kEndpointFailures, labels, t.failures);
    summary(F::kEndpointLatency, std::move(labels), ep.quantiles_ms, t);
  }
  if (stats.user_count) {
    add_generator_sample(out, F::kUsers, {{"source", source}}, *stats.user_count);
  }
  if (stats.total_rps) {
    add_generator_sample(out, F::kRequestsPerSecond, {{"source", source}}, *stats.total_rps);
  }
  if (!stats.state.empty()) {
    add_generator_sample(out, F::kRunning, {{"source", source}},
                         running_state(stats.state) ? 1 : 0);
  }
  if (stats.workers) {
    add_generator_sample(out, F::kWorkers, {{"source", source}}, *stats.workers);
  }
}

namespace {

class LocustScraper : public SourceScraper {
 public:
  explicit LocustScraper(RunObserver* runs) : runs_(runs) {}

  std::vector<SourceRequest> requests(const SourceConfig& config) const override {
    // The uncached counts first, then the state they belong to: a state answer computed after
    // them holds counts at least as high, so the two describe one moment (see process()).
    return {{config.url + "/stats/requests/csv", "text/csv", true},
            {config.url + "/stats/requests", "application/json", false}};
  }

  ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) override {
    ScrapeResult result;
    if (answers.empty()) return result;
    LocustStats stats;
    std::string error;
    if (!parse_locust_stats(answers.back().body, stats, error, config.max_series)) {
      result.error = FetchError::Parse;
      result.message = config.url + error;
      return result;
    }
    double now = unix_now();
    double previous_earliest = last_answer_ > 0 ? last_earliest_ : 0;
    std::vector<LocustCsvRow> counts;
    const FetchResult* csv = answers.size() >= 2 && answers[0].ok() ? &answers[0] : nullptr;
    std::string csv_error;
    if (csv && !parse_locust_requests_csv(csv->body, counts, csv_error, config.max_series)) {
      csv = nullptr;
    }
    const LocustCsvRow* csv_total = nullptr;
    for (const auto& row : counts) {
      if (row.name == "Aggregated" && row.method.empty()) csv_total = &row;
    }
    if (!csv_total) csv = nullptr;
    // Locust memoizes /stats/requests for 2 s, so its state may be older than the counts read
    // just before it: then a step in between would label requests of the new step with the
    // old user count. A state computed after the counts shows at least as many requests. An
    // older one is asked for again shortly (the cache turns over within 2 s), a few times.
    // After Locust cleared its stats (a new run) a state from before shows more requests than
    // the cleared counts, so then the state must show fewer than the counts before the clear.
    bool fresh = csv && (!stats.aggregated || stats.aggregated->requests >= csv_total->requests);
    if (fresh && stats.aggregated && csv_total->requests < last_fresh_.requests) {
      fresh = stats.aggregated->requests < last_fresh_.requests;
    }
    if (csv && !fresh && retries_ < max_retries(config)) {
      ++retries_;
      result.retry_in = kRetrySeconds;
      return result;
    }
    retries_ = 0;
    if (fresh) {
      apply_counts(counts, config.max_series, stats);
      // Counted while the request was under way; a master's counts are its workers' last
      // reports, which come every 3 s.
      last_fresh_.requests = csv_total->requests;
      last_fresh_.state = stats.state;
      last_fresh_.counts = std::move(counts);
      last_fresh_.time = csv->arrived > 0 ? csv->arrived : now;
      last_fresh_.uncertainty = csv->seconds + (stats.workers ? kLocustWorkerReportSeconds : 0.0);
    } else if (last_fresh_.time > 0) {
      // Still a stale state after the retries (or the counts failed this once): the counts of
      // the last answer that had a state of their own, with their own moment; older counts from
      // the state would read as a reset. The counter moves again with the next such answer.
      apply_counts(last_fresh_.counts, config.max_series, stats);
    }
    // The run book hears the newest state; the counters' reset rule the one of their counts.
    std::string newest_state = stats.state;
    if (!fresh && last_fresh_.time > 0) stats.state = last_fresh_.state;
    if (last_fresh_.time > 0) {
      result.data_time = last_fresh_.time;
      result.data_age_uncertainty = last_fresh_.uncertainty;
      last_earliest_ =
          fresh ? last_fresh_.time - last_fresh_.uncertainty : now - kLocustStatsCacheSeconds;
    } else {
      // No uncached counts (an older Locust, a failed request), or none with a state yet: the
      // state's own counts, which may be 2 s older than the answer (docs/sources.md).
      double requests = stats.aggregated ? stats.aggregated->requests : -1;
      result.data_age_uncertainty = kLocustStatsCacheSeconds;
      if (!csv && requests != last_requests_ && last_answer_ > 0) {
        result.data_age_uncertainty = std::clamp(now - last_answer_, 0.0, kLocustStatsCacheSeconds);
      }
      last_earliest_ = now - *result.data_age_uncertainty;
    }
    last_requests_ = stats.aggregated ? stats.aggregated->requests : -1;
    last_answer_ = now;
    if (runs_ && !newest_state.empty()) {
      runs_->generator_seen(sighting(config, newest_state, stats, now, previous_earliest));
    }
    result.dropped = std::move(stats.dropped);
    MetricSink sink;
    mapper_.map(stats, config.name, sink);
    mapper_.end_scrape(config.max_series * 4);
    result.families = sink.take();
    return result;
  }

 private:
  static constexpr double kRetrySeconds = 0.5;
  // Retries within half the interval (the cache's 2 s at most), at least one.
  static int max_retries(const SourceConfig& config) {
    double half = std::chrono::duration<double>(config.interval).count() / 2;
    return std::clamp(
        static_cast<int>(std::min(half, kLocustStatsCacheSeconds + 0.5) / kRetrySeconds), 1, 5);
  }

  /// The uncached counts replace the state answer's: matched by name and method, rows the
  /// state does not have yet added (up to max_rows).
  static void apply_counts(const std::vector<LocustCsvRow>& counts, std::size_t max_rows,
                           LocustStats& stats) {
    auto set = [](LocustRow& row, const LocustCsvRow& c) {
      row.requests = c.requests;
      row.failures = c.failures;
      row.avg_ms = c.avg_ms;
    };
    std::unordered_map<std::string, std::size_t> by_key;
    for (std::size_t i = 0; i < stats.endpoints.size(); ++i) {
      by_key[stats.endpoints[i].method + '\x1f' + stats.endpoints[i].name] = i;
    }
    for (const auto& c : counts) {
      if (c.name == "Aggregated" && c.method.empty()) {
        if (!stats.aggregated) stats.aggregated = LocustRow{c.name, c.method, 0, 0, {}, {}};
        set(*stats.aggregated, c);
      } else if (auto it = by_key.find(c.method + '\x1f' + c.name); it != by_key.end()) {
        set(stats.endpoints[it->second], c);
      } else if (stats.endpoints.size() < max_rows) {
        stats.endpoints.push_back(LocustRow{c.name, c.method, 0, 0, {}, {}});
        set(stats.endpoints.back(), c);
      }
    }
  }

  GeneratorSighting sighting(const SourceConfig& config, const std::string& state,
                             const LocustStats& stats, double now, double previous_earliest) const {
    GeneratorSighting s;
    s.origin = "locust:" + config.name;
    s.activity = state == "running"    ? GeneratorActivity::Steady
                 : state == "spawning" ? GeneratorActivity::Ramping
                                       : GeneratorActivity::Idle;
    s.users = stats.user_count;
    // A state this answer shows first began after the previous answer's moment, which lies up
    // to its age uncertainty before that answer: the run book dates the change in between.
    s.at = now;
    if (previous_earliest > 0) s.since = previous_earliest;
    // Three missed scrapes: the Locust is gone (e.g. --autoquit right after its test).
    auto quiet = 3 * config.interval + config.timeout;
    s.stale_after = std::max(15.0, std::chrono::duration<double>(quiet).count());
    return s;
  }

  /// The counts of the last answer whose state was computed after them.
  struct FreshCounts {
    std::vector<LocustCsvRow> counts;
    double time = 0;  // unix time of their answer, 0 = none yet
    double uncertainty = 0;
    double requests = -1;  // their aggregate request count
    std::string state;     // the state answer's, computed after them
  };

  RunObserver* runs_;
  LocustMapper mapper_;
  FreshCounts last_fresh_;
  int retries_ = 0;            // stale state answers asked for again in a row
  double last_requests_ = -1;  // the aggregate request count of the last answer
  double last_answer_ = 0;     // unix time the last answer was processed
  double last_earliest_ = 0;   // the earliest moment the last answer may describe
};

}  // namespace

std::unique_ptr<SourceScraper> make_locust_scraper(RunObserver* runs) {
  return std::make_unique<LocustScraper>(runs);
}

}  // namespace loadwatch
