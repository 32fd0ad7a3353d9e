#pragma once
// The one set of rules a run obeys, whatever brought it in: the API, the CLI, a run file read
// at start-up, a generator it was inferred from, a push. docs/runs.md and docs/limits.md.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "runs/run.h"

namespace loadwatch {

/// Phases a run keeps; more are refused (API, files) or ignored (inferred).
inline constexpr std::size_t kMaxRunPhases = 1000;
/// Times a run may carry (unix seconds): 1970-01-01 to 2100-01-01. A timestamp outside is a
/// corrupt file or a pusher's bad clock, not a test.
inline constexpr double kMinRunTime = 0;
inline constexpr double kMaxRunTime = 4102444800;
/// Longest origin ("jmeter:SOURCE"): a push source's name is at most this long.
inline constexpr std::size_t kMaxRunOriginBytes = 160;

/// True for a code point no name may hold: C0 and C1 controls, DEL, and the invisible format
/// characters (bidi overrides and isolates, zero-width ones, U+2028/9, tags): they make a name
/// read differently from what it is.
bool forbidden_code_point(std::uint32_t cp);

/// Why `text` cannot be shown as a name or label value: not UTF-8, or a forbidden character
/// (NUL and newline included); "" when it can.
std::string text_problem(std::string_view text);

/// Why `t` cannot be a run's time (not finite, outside kMinRunTime..kMaxRunTime); "" when ok.
std::string time_problem(double t);

/// Why `run` is not a run loadwatch keeps, naming the field ("run.phases[3].name: ...");
/// "" when it is. The API, the loader and inferred runs all go through it.
std::string run_problem(const Run& run);

/// Parses JSON with a bounded cost whatever the input: nesting deeper than `max_depth` and
/// more than `max_values` values are refused while parsing (nothing deep or wide is built),
/// and so is a key given twice in one object. Throws std::runtime_error saying why.
nlohmann::json parse_bounded_json(std::string_view text, int max_depth, std::size_t max_values);

}  // namespace loadwatch
