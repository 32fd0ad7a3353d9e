#include "cli/daemon_clock.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/bounded_json.h"

namespace loadwatch {

std::optional<ClockSkew> skew_from_answer(const RunAnswer& answer) {
  if (!answer.reached || answer.received < answer.sent) return std::nullopt;
  double time = NAN;
  try {
    time = json_number_or(parse_bounded_json(answer.body), "time", NAN);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(time) || time <= 0) return std::nullopt;
  double half_trip = (answer.received - answer.sent) / 2;
  return ClockSkew{time - (answer.sent + half_trip), half_trip + 0.0005};
}

std::optional<ClockSkew> measure_skew(const RunClient& client, std::string* why, int tries) {
  std::optional<ClockSkew> best;
  for (int i = 0; i < tries; ++i) {
    RunAnswer a = client.get("/api/v1/runs?limit=1");
    if (!a.reached) {
      if (why) *why = a.error;
      return best;
    }
    auto s = skew_from_answer(a);
    if (!s) {
      if (why)
        *why =
            client.url() + ": the answer carries no time (HTTP " + std::to_string(a.status) + ")";
      return best;
    }
    if (!best || s->uncertainty < best->uncertainty) best = s;
  }
  return best;
}

}  // namespace loadwatch
