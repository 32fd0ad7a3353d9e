#pragma once
// Test helper: a MetricSink's samples keyed by series, for exact lookups in CHECKs.

#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "metrics/metric_sink.h"

namespace loadwatch::test {

/// Maps "name{label=value,...}" (labels in sink order, values unquoted) to the sample value.
/// A summary spreads as the text format does: name{...,quantile=Q}, name_count{...} and
/// name_sum{...}. Counters and gauges only otherwise.
inline std::map<std::string, double> sample_values(const MetricSink& sink) {
  std::map<std::string, double> out;
  for (const auto& f : sink.families()) {
    for (const auto& s : f.metric) {
      std::string key = f.name + "{";
      for (size_t i = 0; i < s.label.size(); ++i) {
        key += (i ? "," : "") + s.label[i].name + "=" + s.label[i].value;
      }
      if (f.type == prometheus::MetricType::Summary) {
        std::string labels = key.substr(f.name.size());
        for (const auto& q : s.summary.quantile) {
          char buf[32];
          auto end = std::to_chars(buf, buf + sizeof buf, q.quantile).ptr;
          out[key + (s.label.empty() ? "" : ",") + "quantile=" + std::string(buf, end) + "}"] =
              q.value;
        }
        out[f.name + "_count" + labels + "}"] = static_cast<double>(s.summary.sample_count);
        out[f.name + "_sum" + labels + "}"] = s.summary.sample_sum;
        continue;
      }
      key += "}";
      out[key] = f.type == prometheus::MetricType::Counter ? s.counter.value : s.gauge.value;
    }
  }
  return out;
}

/// The value of the first sample of `name` in `fams` whose labels include all of `want`; NaN
/// when there is none. A summary gives its sample count, or with a "quantile" entry in `want`
/// that quantile ("_count" and "_sum": its totals); a histogram gives its sample count.
inline double value(const std::vector<prometheus::MetricFamily>& fams, const std::string& name,
                    const Labels& want = {}) {
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      bool all = true;
      std::string quantile;
      for (const auto& [k, v] : want) {
        if (f.type == prometheus::MetricType::Summary && k == "quantile") {
          quantile = v;
          continue;
        }
        bool found = false;
        for (const auto& l : m.label) found = found || (l.name == k && l.value == v);
        all = all && found;
      }
      if (!all) continue;
      switch (f.type) {
        case prometheus::MetricType::Counter:
          return m.counter.value;
        case prometheus::MetricType::Gauge:
          return m.gauge.value;
        case prometheus::MetricType::Histogram:
          return static_cast<double>(m.histogram.sample_count);
        case prometheus::MetricType::Summary:
          if (quantile.empty() || quantile == "_count") {
            return static_cast<double>(m.summary.sample_count);
          }
          if (quantile == "_sum") return m.summary.sample_sum;
          for (const auto& q : m.summary.quantile) {
            if (std::to_string(q.quantile) == std::to_string(std::stod(quantile))) return q.value;
          }
          return std::nan("");
        default:
          return m.untyped.value;
      }
    }
  }
  return std::nan("");
}

}  // namespace loadwatch::test
