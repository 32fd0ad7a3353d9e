#include "report/prometheus_series_source.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/bounded_json.h"
#include "util/printable.h"

namespace loadwatch::report {

namespace {

/// Prometheus answers a query_range of 11,000 points per series over many series.
constexpr std::size_t kMaxAnswerBytes = 256u << 20;

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

/// Prometheus's own reason in a refused answer ({"status":"error","error":"..."}), e.g. an
/// invalid regex in a --match, on one line and at most 300 bytes; else nothing.
std::string answer_error(const std::string& body) {
  if (body.empty()) return {};
  try {
    std::string e = json_string_or(parse_bounded_json(body), "error");
    if (e.empty()) return {};
    if (e.size() > 300) e = e.substr(0, 300) + "...";
    return ": " + printable_line(e);
  } catch (const std::exception&) {
    return {};
  }
}

std::string format_seconds(double t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

}  // namespace

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

/// The answer's data.result, once status and resultType are what the caller asked for.
/// Parsed with the depth and size caps; a member of the wrong type is an error, not a crash.
nlohmann::json result_of(const std::string& body, const char* api, const char* type) {
  try {
    JsonLimits limits;
    limits.max_bytes = kMaxAnswerBytes;
    nlohmann::json doc = parse_bounded_json(body, limits);
    if (!doc.is_object()) throw JsonInputError("the answer is not a JSON object");
    if (json_string_or(doc, "status") != "success") {
      throw JsonInputError(json_string_or(doc, "error", "status is not success"));
    }
    nlohmann::json& data = doc["data"];
    if (json_string_or(json_object_or_empty(doc, "data"), "resultType") != type) {
      throw JsonInputError(std::string("data.resultType is not ") + type);
    }
    json_array_or_empty(data, "result");
    return data.contains("result") ? std::move(data["result"]) : nlohmann::json::array();
  } catch (const JsonInputError& e) {
    throw SeriesSourceError(std::string(api) + ": " + e.what());
  }
}

std::map<std::string, std::string> labels_of(const nlohmann::json& r, const char* api) {
  std::map<std::string, std::string> out;
  try {
    for (const auto& [k, v] : json_object_or_empty(r, "metric").items()) {
      if (k != "__name__" && v.is_string()) out[k] = v.get<std::string>();
    }
  } catch (const JsonInputError& e) {
    throw SeriesSourceError(std::string(api) + ": a result: " + e.what());
  }
  return out;
}

/// A result's array member ("values" of a matrix, "value" of a vector); empty when absent.
const nlohmann::json& values_of(const nlohmann::json& r, const char* key, const char* api) {
  try {
    return json_array_or_empty(r, key);
  } catch (const JsonInputError& e) {
    throw SeriesSourceError(std::string(api) + ": a result: " + e.what());
  }
}

/// Adds a [time, "value"] pair; NaN and infinities (stale or undefined) are left out.
void add_point(const nlohmann::json& p, const char* api, analysis::Series& to) {
  if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
    throw SeriesSourceError(std::string(api) + ": a point is not [time, \"value\"]");
  }
  double v = std::strtod(p[1].get<std::string>().c_str(), nullptr);
  if (std::isfinite(v)) to.add(p[0].get<double>(), v);
}

}  // namespace

std::vector<LabeledSeries> parse_query_range(const std::string& body) {
  std::vector<LabeledSeries> out;
  for (const auto& r : result_of(body, "query_range", "matrix")) {
    LabeledSeries ls{labels_of(r, "query_range"), {}};
    for (const auto& p : values_of(r, "values", "query_range")) {
      add_point(p, "query_range", ls.series);
    }
    out.push_back(std::move(ls));
  }
  return out;
}

std::vector<LabeledSeries> parse_query_vector(const std::string& body) {
  std::vector<LabeledSeries> out;
  for (const auto& r : result_of(body, "query", "vector")) {
    LabeledSeries ls{labels_of(r, "query"), {}};
    add_point(values_of(r, "value", "query"), "query", ls.series);
    if (!ls.series.empty()) out.push_back(std::move(ls));
  }
  return out;
}

void restamp_to_samples(std::vector<LabeledSeries>& series,
                        const std::vector<LabeledSeries>& sample_times) {
  if (sample_times.empty()) return;
  auto scrape_of = [](const std::map<std::string, std::string>& labels) {
    auto get = [&](const char* k) {
      auto it = labels.find(k);
      return it == labels.end() ? std::string() : it->second;
    };
    return get("job") + '\x1f' + get("instance");
  };
  std::map<std::string, std::map<double, double>> taken_at;  // scrape -> step -> sample time
  for (const auto& s : sample_times) {
    auto& steps = taken_at[scrape_of(s.labels)];
    for (std::size_t i = 0; i < s.series.t.size(); ++i) steps[s.series.t[i]] = s.series.v[i];
  }
  for (auto& s : series) {
    const auto& steps = taken_at[scrape_of(s.labels)];
    analysis::Series moved;
    for (std::size_t i = 0; i < s.series.t.size(); ++i) {
      auto it = steps.find(s.series.t[i]);
      if (it == steps.end()) continue;
      if (!moved.empty() && it->second <= moved.t.back()) continue;  // that sample again
      moved.add(it->second, s.series.v[i]);
    }
    s.series = std::move(moved);
  }
}

double query_step(double from, double to, double min_step) {
  // Written with 3 decimals: rounding the step down could ask for 11001 points and be refused.
  double step = std::ceil(std::max(to - from, 0.0) / 11000.0 * 1000.0) / 1000.0;
  return std::max(min_step, step);
}

PrometheusSeriesSource::PrometheusSeriesSource(PrometheusSourceOptions options)
    : options_(std::move(options)), http_(std::make_unique<HttpFetcher>()) {
  while (!options_.url.empty() && options_.url.back() == '/') options_.url.pop_back();
}

std::string PrometheusSeriesSource::selector(
    const std::string& family, const std::map<std::string, std::string>& match) const {
  std::string out = family + "{";
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"" + escape_label(v) + "\"";
  };
  for (const auto& [k, v] : match) add(k, v);
  if (!options_.instance.empty()) add("instance", options_.instance);
  if (!options_.matchers.empty()) out += (first ? "" : ",") + options_.matchers;
  return out + "}";
}

std::string PrometheusSeriesSource::get(const std::string& path_and_query) {
  FetchOptions fo;
  fo.timeout = options_.timeout;
  fo.max_bytes = kMaxAnswerBytes;
  fo.keep_error_body = true;
  FetchResult r = http_->get(options_.url + path_and_query, fo);
  if (!r.ok()) {
    throw SeriesSourceError("Prometheus " + options_.url + ": " + r.message + answer_error(r.body));
  }
  return std::move(r.body);
}

namespace {

/// The instance/job labels stay out of the report's grouping.
std::vector<LabeledSeries> without_scrape_labels(std::vector<LabeledSeries> all, bool instance) {
  for (auto& s : all) {
    s.labels.erase("job");
    if (instance) s.labels.erase("instance");
  }
  return all;
}

}  // namespace

std::vector<LabeledSeries> PrometheusSeriesSource::query_range(const std::string& query,
                                                               double from, double to) {
  return parse_query_range(get("/api/v1/query_range?query=" + url_encode(query) + "&start=" +
                               format_seconds(from) + "&end=" + format_seconds(to) + "&step=" +
                               format_seconds(query_step(from, to, options_.step_seconds))));
}

// The points are put back at the times loadwatch took its samples, as its history holds
// them: the steps of a query_range fall up to a scrape interval after the sample, by a
// different amount at each edge of a window, which moved a rate over a few seconds by up to
// 2.3 times.
std::vector<LabeledSeries> PrometheusSeriesSource::fetch(
    const std::string& family, const std::map<std::string, std::string>& match, double from,
    double to) {
  return fetch_expression(selector(family, match), from, to);
}

std::vector<LabeledSeries> PrometheusSeriesSource::fetch_expression(const std::string& query,
                                                                    double from, double to) {
  const double read_to = to + kScrapeLagSeconds;
  if (!sample_times_ || sample_times_->from != from || sample_times_->to != to) {
    sample_times_ = SampleTimes{
        from, to,
        query_range(selector("loadwatch_last_sample_timestamp_seconds", {}), from, read_to)};
  }
  std::vector<LabeledSeries> out = query_range(query, from, read_to);
  restamp_to_samples(out, sample_times_->series);
  for (auto& s : out) {
    while (!s.series.empty() && s.series.t.back() > to) {  // taken after the range
      s.series.t.pop_back();
      s.series.v.pop_back();
    }
  }
  return without_scrape_labels(std::move(out), !options_.instance.empty());
}

std::vector<LabeledSeries> PrometheusSeriesSource::instant(const std::string& query, double at) {
  return parse_query_vector(
      get("/api/v1/query?query=" + url_encode(query) + "&time=" + format_seconds(at)));
}

std::vector<LabeledSeries> PrometheusSeriesSource::fetch_last(
    const std::string& family, const std::map<std::string, std::string>& match, double from,
    double to) {
  auto range_ms = static_cast<long long>(std::ceil(std::max(to - from, 0.001) * 1000));
  std::string query =
      "last_over_time(" + selector(family, match) + "[" + std::to_string(range_ms) + "ms])";
  return without_scrape_labels(instant(query, to), !options_.instance.empty());
}

}  // namespace loadwatch::report
