#include "runs/run_rules.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <vector>

#include "metrics/exposition.h"
#include "runs/run_request.h"

namespace loadwatch {

namespace {

/// Decodes the well-formed UTF-8 sequence at `i` (checked by the caller); returns its length.
std::size_t decode(std::string_view s, std::size_t i, std::uint32_t& cp) {
  auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
  cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (std::size_t k = 1; k < n && i + k < s.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  }
  return n;
}

}  // namespace

bool forbidden_code_point(std::uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return true;  // C0, DEL, C1
  if (cp == 0xad || cp == 0x61c || cp == 0x180e || cp == 0xfeff) return true;
  if (cp >= 0x600 && cp <= 0x605) return true;
  if (cp == 0x6dd || cp == 0x70f || cp == 0x8e2) return true;
  if (cp >= 0x200b && cp <= 0x200f) return true;  // zero-width, LRM, RLM
  if (cp >= 0x2028 && cp <= 0x202e) return true;  // line/paragraph separators, embeddings
  if (cp >= 0x2060 && cp <= 0x206f) return true;  // word joiner, isolates, deprecated formats
  if (cp >= 0xfff9 && cp <= 0xfffb) return true;  // interlinear annotations
  if (cp == 0x110bd || cp == 0x110cd) return true;
  if (cp >= 0x13430 && cp <= 0x1343f) return true;
  if (cp >= 0x1bca0 && cp <= 0x1bca3) return true;
  if (cp >= 0x1d173 && cp <= 0x1d17a) return true;
  if (cp >= 0xe0000 && cp <= 0xe0fff) return true;  // tags, variation selectors supplement
  return false;
}

std::string text_problem(std::string_view text) {
  if (!valid_utf8(text)) return "not valid UTF-8";
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    i += decode(text, i, cp);
    if (forbidden_code_point(cp)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", cp);
      return std::string("contains a control or format character (") + hex + ")";
    }
  }
  return "";
}

std::string time_problem(double t) {
  if (!std::isfinite(t)) return "not finite";
  if (t < kMinRunTime || t > kMaxRunTime) return "outside 1970-01-01..2100-01-01";
  return "";
}

std::string run_problem(const Run& run) {
  auto at = [](const std::string& field, const std::string& why) {
    return "field \"" + field + "\": " + why;
  };
  if (!plausible_run_id(run.id)) return at("run.id", "not a run id");
  if (std::string why = name_problem(run.name); !why.empty()) return at("run.name", why);
  if (run.origin.empty() || run.origin.size() > kMaxRunOriginBytes) {
    return at("run.origin", "empty or longer than " + std::to_string(kMaxRunOriginBytes));
  }
  if (std::string why = text_problem(run.origin); !why.empty()) return at("run.origin", why);
  if (run.labels.size() > kMaxLabels) {
    return at("run.labels", "more than " + std::to_string(kMaxLabels) + " labels");
  }
  for (const auto& [k, v] : run.labels) {
    if (std::string why = label_problem(k, v); !why.empty()) return at("run.labels." + k, why);
  }
  if (std::string why = hosts_problem(run.hosts); !why.empty()) return at("run.hosts", why);
  if (std::string why = time_problem(run.start); !why.empty()) return at("run.start", why);
  if (run.end) {
    if (std::string why = time_problem(*run.end); !why.empty()) return at("run.end", why);
    if (*run.end < run.start) return at("run.end", "before the start");
  }
  if (run.state != RunState::Running && !run.end) return at("run.end", "an ended run needs one");
  if (std::string why = time_problem(run.last_seen); !why.empty()) return at("last_seen", why);
  if (run.phases.size() > kMaxRunPhases) {
    return at("run.phases", "more than " + std::to_string(kMaxRunPhases));
  }
  double previous = run.start;
  for (std::size_t i = 0; i < run.phases.size(); ++i) {
    const RunPhase& p = run.phases[i];
    std::string where = "run.phases[" + std::to_string(i) + "]";
    if (std::string why = name_problem(p.name); !why.empty()) return at(where + ".name", why);
    if (std::string why = time_problem(p.start); !why.empty()) return at(where + ".start", why);
    if (p.start < previous) return at(where + ".start", "before the run or the phase before");
    if (run.end && p.start > *run.end) return at(where + ".start", "after the run's end");
    if (p.users && (*p.users < 0 || *p.users > kMaxUsers)) {
      return at(where + ".users", "want 0 to " + std::to_string(kMaxUsers));
    }
    previous = p.start;
  }
  return "";
}

nlohmann::json parse_bounded_json(std::string_view text, int max_depth, std::size_t max_values) {
  // The parser callback sees every event before anything is stored: refusing there keeps a
  // hostile document from building a deep or wide tree. nlohmann's parser itself keeps an
  // explicit stack, no recursion. The key sets are per open object, for duplicate keys.
  std::vector<std::set<std::string>> keys;
  std::size_t values = 0;
  using Event = nlohmann::json::parse_event_t;
  auto callback = [&](int depth, Event event, nlohmann::json& parsed) {
    if (depth > max_depth)
      throw std::runtime_error("nested deeper than " + std::to_string(max_depth));
    switch (event) {
      case Event::object_start:
        keys.emplace_back();
        [[fallthrough]];
      case Event::array_start:
      case Event::value:
        if (++values > max_values) {
          throw std::runtime_error("more than " + std::to_string(max_values) + " values");
        }
        break;
      case Event::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second) {
          throw std::runtime_error("key \"" + parsed.get<std::string>() + "\" given twice");
        }
        break;
      case Event::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case Event::array_end:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number past a double (1e999).
    std::string why = e.what();
    auto colon = why.find("]: ");  // drop nlohmann's "[json.exception.parse_error.101]" tag
    throw std::runtime_error("not JSON: " +
                             (colon == std::string::npos ? why : why.substr(colon + 3)));
  }
}

}  // namespace loadwatch
