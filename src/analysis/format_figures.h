#pragma once
// Figures as people read them in a report: latency in ms, ratios in %, memory in MiB. One place,
// so the table, markdown, compare output and JUnit messages agree.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace loadwatch::analysis {

inline constexpr const char* kNoFigure = "-";

std::string fmt_ms(double seconds);                   // "12.3 ms"
std::string fmt_rps(double rps);                      // "1852.0" (4 significant digits at least)
std::string fmt_pct(double ratio);                    // 0.0123 -> "1.23 %"
std::string fmt_cores(double cores);                  // "1.93"
std::string fmt_mib(double bytes);                    // "123.4 MiB"
std::string fmt_count(double n);                      // "1234"
std::string fmt_number(double v, int precision = 4);  // %.Ng
std::string fmt_seconds(double seconds);              // "3m00s", "45s"
std::string fmt_change(double from, double to);
/// "phase 50 users", or "phase step 3 (150 users)" when the name is not the user count.
std::string fmt_phase(
    const std::string& name,
    const std::optional<std::int64_t>& users);  // "+30.0 %"; kNoFigure when from is 0

/// "hog 1.95, make 0.50": names with their cores, the most first; "" for none.
std::string fmt_busiest(const std::map<std::string, double>& cores_by_name);

/// The optional forms print kNoFigure when absent.
template <typename F>
std::string fmt_opt(const std::optional<double>& v, F f) {
  return v ? f(*v) : std::string(kNoFigure);
}

}  // namespace loadwatch::analysis
