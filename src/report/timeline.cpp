#include "report/timeline.h"

#include <cmath>

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

}  // namespace

nlohmann::ordered_json timeline_json(const analysis::RunSeries& rs) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  add(list, "RPS", "req/s", rs.generator.requests.empty() ? rs.generator.rps
                                                          : per_second(rs.generator.requests));
  add(list, "p50", "ms", rs.generator.p50_seconds, 1000);
  add(list, "p95", "ms", rs.generator.p95_seconds, 1000);
  add(list, "p99", "ms", rs.generator.p99_seconds, 1000);
  for (const auto& t : rs.targets) add(list, "CPU " + t.name, "cores", per_second(t.cpu_seconds));
  return {{"series", std::move(list)}};
}

}  // namespace loadwatch::report
