#include "analysis/format_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace loadwatch::analysis {

namespace {
std::string printf_string(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}
}  // namespace

std::string fmt_ms(double seconds) {
  double ms = seconds * 1e3;
  if (ms != 0 && std::fabs(ms) < 1) return printf_string("%.3f ms", ms);
  return printf_string(std::fabs(ms) < 100 ? "%.1f ms" : "%.0f ms", ms);
}

std::string fmt_rps(double rps) {
  return printf_string(std::fabs(rps) < 100 ? "%.2f" : "%.1f", rps);
}

std::string fmt_pct(double ratio) { return printf_string("%.2f %%", ratio * 100); }

std::string fmt_cores(double cores) { return printf_string("%.2f", cores); }

std::string fmt_mib(double bytes) { return printf_string("%.1f MiB", bytes / (1024.0 * 1024.0)); }

std::string fmt_count(double n) { return printf_string("%.0f", n); }

std::string fmt_number(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string fmt_change(double from, double to) {
  if (from == 0) return kNoFigure;
  return printf_string("%+.1f %%", (to / from - 1) * 100);
}

std::string fmt_phase(const std::string& name, const std::optional<std::int64_t>& users) {
  std::string s = "phase " + name;
  if (!users) return s;
  if (name == std::to_string(*users)) return s + " users";
  return s + " (" + std::to_string(*users) + " users)";
}

std::string fmt_seconds(double seconds) {
  long s = std::lround(seconds);
  char buf[64];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", s / 3600, s / 60 % 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", s);
  }
  return buf;
}

std::string fmt_busiest(const std::map<std::string, double>& cores_by_name) {
  std::vector<std::pair<double, const std::string*>> top;
  for (const auto& [name, cores] : cores_by_name) top.emplace_back(cores, &name);
  std::stable_sort(top.begin(), top.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [cores, name] : top)
    out += (out.empty() ? "" : ", ") + *name + " " + fmt_cores(cores);
  return out;
}

}  // namespace loadwatch::analysis
