#include "report/prometheus_series_source.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace loadwatch::report {

namespace {

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

std::vector<LabeledSeries> parse_query_range(const std::string& body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded()) throw SeriesSourceError("query_range: the answer is not JSON");
  if (doc.value("status", "") != "success") {
    throw SeriesSourceError("query_range: " + doc.value("error", std::string("status is not success")));
  }
  const nlohmann::json data = doc.value("data", nlohmann::json::object());
  if (data.value("resultType", "") != "matrix") {
    throw SeriesSourceError("query_range: data.resultType is not matrix");
  }
  std::vector<LabeledSeries> out;
  const nlohmann::json result = data.value("result", nlohmann::json::array());
  for (const auto& r : result) {
    LabeledSeries ls;
    const nlohmann::json metric = r.value("metric", nlohmann::json::object());
    for (const auto& [k, v] : metric.items()) {
      if (k != "__name__" && v.is_string()) ls.labels[k] = v.get<std::string>();
    }
    const nlohmann::json values = r.value("values", nlohmann::json::array());
    for (const auto& p : values) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) {
        throw SeriesSourceError("query_range: a point is not [time, \"value\"]");
      }
      double v = std::strtod(p[1].get<std::string>().c_str(), nullptr);
      if (std::isfinite(v)) ls.series.add(p[0].get<double>(), v);
    }
    out.push_back(std::move(ls));
  }
  return out;
}

PrometheusSeriesSource::PrometheusSeriesSource(PrometheusSourceOptions options)
    : options_(std::move(options)), http_(std::make_unique<HttpFetcher>()) {
  while (!options_.url.empty() && options_.url.back() == '/') options_.url.pop_back();
}

std::vector<LabeledSeries> PrometheusSeriesSource::fetch(
    const std::string& family, const std::map<std::string, std::string>& match, double from,
    double to) {
  std::string selector = family + "{";
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!first) selector += ",";
    first = false;
    selector += k + "=\"" + escape_label(v) + "\"";
  };
  for (const auto& [k, v] : match) add(k, v);
  if (!options_.instance.empty()) add("instance", options_.instance);
  selector += "}";
  double step = std::max(options_.step_seconds, (to - from) / 11000.0);
  std::string url = options_.url + "/api/v1/query_range?query=" + url_encode(selector) +
                    "&start=" + format_seconds(from) + "&end=" + format_seconds(to) +
                    "&step=" + format_seconds(step);
  FetchOptions fo;
  fo.timeout = options_.timeout;
  fo.max_bytes = 256u << 20;
  FetchResult r = http_->get(url, fo);
  if (!r.ok()) {
    throw SeriesSourceError("query_range " + options_.url + ": " + r.message);
  }
  std::vector<LabeledSeries> out = parse_query_range(r.body);
  // A counter's raw value: keep the instance/job labels out of the report's grouping.
  for (auto& s : out) {
    s.labels.erase("job");
    if (!options_.instance.empty()) s.labels.erase("instance");
  }
  return out;
}

}  // namespace loadwatch::report
