#pragma once
// What load generators tell loadwatch about their test runs, as the sources, push listeners
// and the textfile collector see it. They call an observer with what they saw; the RunBook
// turns it into runs and phases (docs/runs.md, "Inferred runs"). Kept to plain values so
// those files need nothing else from src/runs/.

#include <optional>
#include <string>

namespace loadwatch {

/// A generator's activity as one scrape or push showed it.
enum class GeneratorActivity {
  Idle,     // no test running (Locust: ready, stopped, ...; JMeter: no threads)
  Ramping,  // users being added or removed (Locust: spawning)
  Steady,   // running at a settled user count (Locust: running)
  Unknown,  // alive, state not told (a push without thread counts): only keeps it "seen"
};

struct GeneratorSighting {
  std::string origin;  // "locust:SOURCE", "jmeter:SOURCE"
  GeneratorActivity activity = GeneratorActivity::Idle;
  /// Settled user count, when phases should follow it (Locust); absent: no phases.
  std::optional<double> users;
  double at = 0;  // unix seconds
  /// A scraped state is known only by `at`: it was not yet shown at `since` (the moment the
  /// previous answer may describe, at its earliest), so a change it brings happened in
  /// (since, at] and is dated to the middle. Unset: `at` is the change's own moment (a
  /// generator that sends its timestamps).
  std::optional<double> since;
  /// With no sighting for this long, the generator is gone and its run ends where it was
  /// last seen (a Locust that quit right after its test).
  double stale_after = 30;
};

/// Implementations are thread-safe: sources call from their own threads, push listeners from
/// HTTP threads (possibly holding their own lock: an observer never calls back into them).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  /// Called on every scrape or push that shows the generator's state, changed or not.
  virtual void generator_seen(const GeneratorSighting& sighting) = 0;
  /// An explicit start annotation (JMeter's InfluxDB listener: "<title> started").
  virtual void generator_run_started(const std::string& origin, const std::string& name,
                                     double at) = 0;
  /// The matching end annotation.
  virtual void generator_run_ended(const std::string& origin, double at) = 0;
  /// A summary of a run that already ended (wrk's textfile summary). `start` may equal `end`
  /// when the summary gives no duration.
  virtual void finished_run_seen(const std::string& origin, const std::string& name, double start,
                                 double end) = 0;
};

}  // namespace loadwatch
