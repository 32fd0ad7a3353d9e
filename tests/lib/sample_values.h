#pragma once
// Test helper: a MetricSink's samples keyed by series, for exact lookups in CHECKs.

#include <charconv>
#include <map>
#include <string>

#include "metric_sink.h"

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

}  // namespace loadwatch::test
