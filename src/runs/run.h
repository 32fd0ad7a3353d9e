#pragma once
// A test run as loadwatch records it: name, labels, start, end, state, where it came from, and
// its ordered phases (load steps). Plain values: RunBook owns the live ones.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// One step of a run. It lasts until the next phase starts, or until the run ends.
struct RunPhase {
  std::string name;
  double start = 0;                   // unix seconds
  std::optional<std::int64_t> users;  // the load step's user count, when known
};

enum class RunState { Running, Finished, Interrupted };

/// "running", "finished", "interrupted".
const char* run_state_name(RunState state);

struct Run {
  std::string id;  // "20261201T170512-checkout": UTC start second + name; sorts by start
  std::string name;
  std::map<std::string, std::string> labels;
  /// Who opened it: "api", "locust:SOURCE", "jmeter:SOURCE" or "wrk:RUN".
  std::string origin;
  RunState state = RunState::Running;
  double start = 0;
  std::optional<double> end;  // set once the run is finished or interrupted
  std::vector<RunPhase> phases;
  /// The hosts a run across several loadwatches took part on, as the client that opened it
  /// named them (empty: a run of this host alone).
  std::vector<std::string> hosts;
  /// When the daemon last saw the run open: the end given to a run found open at start-up.
  double last_seen = 0;

  bool open() const { return state == RunState::Running; }
  /// Where phase i ends: the next phase's start, else the run's end (none while open).
  std::optional<double> phase_end(std::size_t i) const;
};

/// The id of a run named `name` that starts at `start`: UTC "YYYYMMDDTHHMMSS-" and the name
/// reduced to [a-z0-9._-] (at most 48 characters, "run" when nothing is left), so it is safe
/// as a file name and a URL segment.
std::string make_run_id(double start, std::string_view name);

/// True when `id` could have come from make_run_id (optionally with a "-N" suffix): the check
/// before an id from a URL or a file name is used as a path.
bool plausible_run_id(std::string_view id);

/// The API's view of a run (phases carry their computed end).
nlohmann::ordered_json run_to_json(const Run& run);
/// The list's view: the same fields with "phase_count" instead of "phases".
nlohmann::ordered_json run_summary_json(const Run& run, std::size_t phase_count);
/// Appends run_to_json(run).dump() to `out` (invalid UTF-8 replaced) without building the JSON
/// tree: a 1000-phase run costs its text, not ten times that.
void append_run_json(std::string& out, const Run& run);

/// The stored form: the API view plus what only the daemon needs (last_seen), versioned.
nlohmann::ordered_json run_to_stored_json(const Run& run);
/// Reads the stored form; throws std::runtime_error naming the field that is missing or wrong.
Run run_from_stored_json(const nlohmann::json& stored);

}  // namespace loadwatch
