#include "report/timeline.h"

#include <algorithm>
#include <cmath>

#include "analysis/change_points.h"

namespace loadwatch::report {

namespace {

using analysis::per_second;
using analysis::Series;

double rounded(double v) { return std::round(v * 1e4) / 1e4; }

void add(nlohmann::ordered_json& list, const std::string& name, const char* unit, const Series& s,
         double scale = 1) {
  if (s.empty()) return;
  nlohmann::ordered_json t = nlohmann::ordered_json::array(), v = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < s.t.size(); ++i) {
    t.push_back(std::round(s.t[i] * 1000) / 1000);
    v.push_back(rounded(s.v[i] * scale));
  }
  list.push_back({{"name", name}, {"unit", unit}, {"t", std::move(t)}, {"v", std::move(v)}});
}

/// Requests per second over time from the moments each source's counter changed: between two
/// change points the rate is the rise over the time between the moments they describe. Taken
/// per sample, a counter scraped every 5 s reads as a 0 <-> peak sawtooth. The sum over the
/// sources, on the first one's sample times; a gap where any source's rate is unknown.
Series request_rate(const analysis::GeneratorSeries& g) {
  if (g.sources.empty()) return g.requests.empty() ? g.rps : per_second(g.requests);
  struct Segment {
    double from, to, rate;
  };
  std::vector<std::vector<Segment>> per_source;
  for (const auto& src : g.sources) {
    auto points = analysis::change_points(src.requests, &src.data_age_seconds,
                                          &src.data_age_uncertainty_seconds);
    std::vector<Segment> segments;
    for (std::size_t i = 1; i < points.size(); ++i) {
      double dt = points[i].at() - points[i - 1].at();
      double dv = points[i].value - points[i - 1].value;
      if (dt > 0 && dv >= 0) segments.push_back({points[i - 1].at(), points[i].at(), dv / dt});
    }
    per_source.push_back(std::move(segments));
  }
  Series out;
  for (double t : g.sources.front().requests.t) {
    double sum = 0;
    bool known = true;
    for (const auto& segments : per_source) {
      auto it = std::lower_bound(segments.begin(), segments.end(), t,
                                 [](const Segment& s, double x) { return s.to < x; });
      if (it == segments.end() || t < it->from) {
        known = false;
        break;
      }
      sum += it->rate;
    }
    out.add(t, known ? sum : std::nan(""));
  }
  return out;
}

}  // namespace

nlohmann::ordered_json timeline_json(const analysis::RunSeries& rs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  add(list, "RPS", "req/s", request_rate(rs.generator));
  add(list, "p50", "ms", rs.generator.p50_seconds, 1000);
  add(list, "p95", "ms", rs.generator.p95_seconds, 1000);
  add(list, "p99", "ms", rs.generator.p99_seconds, 1000);
  for (const auto& t : rs.targets) add(list, "CPU " + t.name, "cores", per_second(t.cpu_seconds));
  return {{"series", std::move(list)}};
}

}  // namespace loadwatch::report
