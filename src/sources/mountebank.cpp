#include "sources/mountebank.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "sources/json_events.h"
#include "sources/prom_text_parser.h"
#include "sources/prometheus.h"

namespace loadwatch {

namespace {

const char* const kRequestsName = "loadwatch_mock_requests_total";
const char* const kRequestsHelp =
    "Requests an imposter received (Mountebank numberOfRequests, kept monotonic across resets).";
const char* const kUnmatchedName = "loadwatch_mock_unmatched_requests_total";
const char* const kUnmatchedHelp =
    "Requests no stub of the imposter matched (Mountebank mb_no_match_total).";

// Reads {"imposters": [{"protocol": …, "port": …, "name": …, "numberOfRequests": …}, …]};
// everything else (the _links objects, stubs) is skipped.
class ImpostersHandler : public JsonHandler {
 public:
  ImpostersHandler(std::vector<MountebankImposter>& out, std::size_t max_imposters)
      : out_(out), max_imposters_(max_imposters) {}
  DropCounts dropped_;

  bool begin_object() override {
    if (depth_ == 0) root_is_object_ = true;
    if (depth_ == 2 && in_list_) {
      entry_ = Entry{};
      in_entry_ = true;
    }
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 2 && in_entry_) {
      in_entry_ = false;
      if (entry_.protocol && !entry_.port.empty()) {
        // Bounded: an imposter becomes series labelled with its protocol:port.
        if (entry_.protocol->size() + entry_.port.size() + 1 > kMaxLabelValueBytes) {
          count_drop(dropped_, drop_reason::kLabelLimit);
          return true;
        }
        if (out_.size() >= max_imposters_) {
          count_drop(dropped_, drop_reason::kMaxSeries);
          return true;
        }
        MountebankImposter m;
        m.label = *entry_.protocol + ":" + entry_.port;
        m.name = std::move(entry_.name);
        m.requests = entry_.requests;
        out_.push_back(std::move(m));
      }
    }
    return true;
  }
  bool begin_array() override {
    if (depth_ == 1 && key_ == "imposters") {
      in_list_ = true;
      saw_list_ = true;
      out_.clear();  // a repeated key replaces, as in a DOM
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (depth_ == 1) in_list_ = false;
    return true;
  }
  bool key(std::string_view k) override {
    key_.assign(k);
    return true;
  }
  bool string(std::string_view v) override {
    if (!entry_field()) return true;
    // Text past the label cap is not copied: the entry is dropped at its end.
    std::string_view kept = v.substr(0, kMaxLabelValueBytes + 1);
    if (key_ == "protocol") {
      entry_.protocol = std::string(kept);
    } else if (key_ == "port") {
      entry_.port.assign(kept);
    } else if (key_ == "name") {
      entry_.name.assign(kept);
      truncate_utf8(entry_.name, kMaxLabelValueBytes);  // not within a UTF-8 sequence
    } else if (key_ == "numberOfRequests") {
      entry_.requests = 0;
    }
    return true;
  }
  bool number(double v) override {
    if (!entry_field()) return true;
    if (key_ == "port") {
      entry_.port = port_text(v);
    } else if (key_ == "numberOfRequests") {
      entry_.requests = v;
    } else if (key_ == "protocol") {
      entry_.protocol.reset();
    }
    return true;
  }
  bool boolean(bool) override { return other(); }
  bool null() override { return other(); }

  bool valid() const { return root_is_object_ && saw_list_; }

 private:
  struct Entry {
    std::optional<std::string> protocol;
    std::string port;
    std::string name;
    double requests = 0;
  };

  // A scalar member of an imposter entry (depth 3: root, list, entry).
  bool entry_field() const { return in_entry_ && depth_ == 3; }

  bool other() {
    if (!entry_field()) return true;
    if (key_ == "protocol") entry_.protocol.reset();
    if (key_ == "port") entry_.port.clear();
    if (key_ == "numberOfRequests") entry_.requests = 0;
    return true;
  }

  static std::string port_text(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, p) : std::string();
  }

  std::vector<MountebankImposter>& out_;
  std::size_t max_imposters_;
  std::string key_;
  int depth_ = 0;
  bool root_is_object_ = false;
  bool saw_list_ = false;
  bool in_list_ = false;
  bool in_entry_ = false;
  Entry entry_;
};

// Reads {"process": {"uptime": N}, …}; everything else is skipped.
class UptimeHandler : public JsonHandler {
 public:
  std::optional<double> uptime;

  bool begin_object() override {
    in_process_ = depth_ == 1 && key_ == "process";
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 1) in_process_ = false;
    return true;
  }
  bool begin_array() override {
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(std::string_view k) override {
    key_.assign(k.substr(0, 16));  // only "process" and "uptime" matter
    return true;
  }
  bool string(std::string_view) override { return true; }
  bool number(double v) override {
    if (in_process_ && depth_ == 2 && key_ == "uptime" && std::isfinite(v) && v >= 0) uptime = v;
    return true;
  }
  bool boolean(bool) override { return true; }
  bool null() override { return true; }

 private:
  std::string key_;
  int depth_ = 0;
  bool in_process_ = false;
};

}  // namespace

std::optional<double> parse_mountebank_uptime(std::string_view json) {
  UptimeHandler handler;
  std::string why;
  if (!read_json_events(json, handler, why)) return std::nullopt;
  return handler.uptime;
}

bool parse_mountebank_imposters(std::string_view json, std::vector<MountebankImposter>& out,
                                std::string& error, std::size_t max_imposters,
                                DropCounts* dropped) {
  out.clear();
  ImpostersHandler handler(out, max_imposters);
  std::string why;
  if (!read_json_events(json, handler, why)) {
    out.clear();
    error = "/imposters: not JSON (" + why + ")";
    return false;
  }
  if (!handler.valid()) {
    out.clear();
    error = "/imposters: no \"imposters\" list";
    return false;
  }
  if (dropped) {
    for (const auto& [reason, n] : handler.dropped_) count_drop(*dropped, reason, n);
  }
  return true;
}

std::string normalise_imposter_label(std::string_view value) {
  // "[http:3000 orders api] " -> "http:3000" (mb's logger prefix, lib/models/imposter.js).
  if (value.empty() || value.front() != '[') return std::string(value);
  std::string_view inner = value.substr(1);
  size_t end = inner.find_first_of(" ]");
  if (end == std::string_view::npos || end == 0) return std::string(value);
  return std::string(inner.substr(0, end));
}

bool mountebank_family_exported(std::string_view name) {
  static constexpr std::string_view exact[] = {"mb_request_total",
                                               "mb_no_match_total",
                                               "mb_predicate_match_duration_seconds",
                                               "mb_response_generation_duration_seconds",
                                               "mb_behavior_duration_seconds",
                                               "mb_blocked_ip_total"};
  for (auto e : exact) {
    if (name == e) return true;
  }
  return name.rfind("mb_proxy_", 0) == 0;
}

void MountebankMapper::map(const std::vector<MountebankImposter>& imposters,
                           std::vector<prometheus::MetricFamily>* metrics,
                           const std::string& source, MetricSink& out) {
  if (metrics) {
    for (const auto& fam : *metrics) {
      if (fam.name != "mb_process_start_time_seconds" || fam.metric.empty()) continue;
      const auto& m = fam.metric.front();
      double start = fam.type == prometheus::MetricType::Gauge ? m.gauge.value : m.untyped.value;
      if (start_time_ != 0 && start != start_time_) carry_.reset_all();
      start_time_ = start;
    }
  }
  if (restarted_) {
    // Once, even when the start time above moved too: a second reset_all adds nothing.
    carry_.reset_all();
    restarted_ = false;
  }
  CounterCarry& carry = carry_;
  for (const auto& imp : imposters) {
    out.counter(kRequestsName, kRequestsHelp, {{"source", source}, {"imposter", imp.label}},
                carry.update("requests\x1f" + imp.label, imp.requests));
  }
  if (!metrics) return;

  std::vector<prometheus::MetricFamily> kept;
  std::map<std::string, double> unmatched;
  for (const auto& imp : imposters) unmatched[imp.label] = 0;
  for (auto& fam : *metrics) {
    if (!mountebank_family_exported(fam.name)) continue;
    for (auto& m : fam.metric) {
      for (auto& l : m.label) {
        if (l.name == "imposter") l.value = normalise_imposter_label(l.value);
      }
      if (fam.name == "mb_no_match_total") {
        for (const auto& l : m.label) {
          if (l.name == "imposter") {
            double v =
                fam.type == prometheus::MetricType::Counter ? m.counter.value : m.untyped.value;
            unmatched[l.value] += v;
          }
        }
      }
    }
    kept.push_back(std::move(fam));
  }
  for (const auto& [imposter, value] : unmatched) {
    out.counter(kUnmatchedName, kUnmatchedHelp, {{"source", source}, {"imposter", imposter}},
                carry.update("unmatched\x1f" + imposter, value));
  }
  add_source_label(kept, source);
  out.append(std::move(kept));
}

void MountebankMapper::note_uptime(double uptime, double arrived, double seconds) {
  if (!(uptime >= 0) || !(seconds >= 0) || !std::isfinite(arrived)) return;
  const double low = arrived - seconds - uptime;
  const double high = arrived - uptime;
  if (started_known_) {
    // 10 ms for the rounding of the two clocks' readings, and 0.1 % of the time between the
    // answers for the drift of mb's clock against ours when mb runs on another host.
    const double slack = 0.01 + 1e-3 * std::max(0.0, arrived - start_seen_at_);
    if (low > start_high_ + slack || high < start_low_ - slack) restarted_ = true;
  }
  started_known_ = true;
  start_low_ = low;
  start_high_ = high;
  start_seen_at_ = arrived;
}

namespace {

class MountebankScraper : public SourceScraper {
 public:
  std::vector<SourceRequest> requests(const SourceConfig& config) const override {
    return {{config.url + "/imposters", "application/json", false},
            {config.url + "/metrics", kPromTextAccept, true},
            {config.url + "/config", "application/json", true}};
  }

  ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) override {
    ScrapeResult result;
    if (answers.empty()) return result;
    std::vector<MountebankImposter> imposters;
    std::string error;
    if (!parse_mountebank_imposters(answers[0].body, imposters, error, config.max_series,
                                    &result.dropped)) {
      result.error = FetchError::Parse;
      result.message = config.url + error;
      return result;
    }
    std::vector<prometheus::MetricFamily> families;
    bool have_metrics = false;
    if (answers.size() > 1) {
      const FetchResult& m = answers[1];
      if (m.ok()) {
        PromTextLimits limits;
        limits.max_series = config.max_series;
        PromTextParse parsed = parse_prom_text(m.body, limits);
        if (!parsed.ok()) {
          result.error = FetchError::Parse;
          result.message = config.url + "/metrics: " + parsed.error;
          return result;
        }
        families = std::move(parsed.families);
        result.dropped = std::move(parsed.dropped);
        have_metrics = true;
      } else if (!(m.error == FetchError::HttpStatus && m.status == 404)) {
        result.error = m.error;
        result.message = config.url + "/metrics: " + m.message;
        return result;
      }
    }
    if (answers.size() > 2 && answers[2].ok()) {
      const FetchResult& c = answers[2];
      if (auto uptime = parse_mountebank_uptime(c.body)) {
        mapper_.note_uptime(*uptime, c.steady, c.seconds);
      }
    }
    MetricSink sink;
    mapper_.map(imposters, have_metrics ? &families : nullptr, config.name, sink);
    mapper_.end_scrape(config.max_series * 4);
    DropCounts dropped = std::move(result.dropped);
    result = ScrapeResult{};
    result.families = sink.take();
    result.dropped = std::move(dropped);
    return result;
  }

 private:
  MountebankMapper mapper_;
};

}  // namespace

std::unique_ptr<SourceScraper> make_mountebank_scraper() {
  return std::make_unique<MountebankScraper>();
}

}  // namespace loadwatch
