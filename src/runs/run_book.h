#pragma once
// The runs loadwatch knows: the one open now and the last finished ones, from the API and
// inferred from load generators; kept on disk when a storage path is given.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runs/run.h"
#include "runs/run_observer.h"
#include "runs/run_request.h"
#include "runs/run_rules.h"
#include "runs/run_store.h"
#include "util/clock_watch.h"

namespace loadwatch {

/// An API write that the current state refuses (no run open, too many phases): HTTP 409.
class RunConflict : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Retention is per writer: "api" (the API and the CLI), "wrk" (textfile summaries), and each
/// inferred or pushed origin ("locust:lc", "jmeter:perf"). A writer only ever makes room by
/// deleting its own oldest runs, so no writer can push out another's history.
struct RunBookLimits {
  /// Runs kept per writer (its open run included), in memory and on disk; its oldest go first.
  std::size_t max_finished = 100;
  /// Bytes of runs kept per writer (their stored size, about).
  std::size_t max_bytes_per_writer = 16u << 20;
  /// Writers with runs kept at once; "api" always has its place beside them.
  std::size_t max_writers = 8;
  /// A finished run younger than this (since its end) is never deleted to make room: the new
  /// run is refused instead (the API answers 409; an inferred run is not recorded).
  double min_age_seconds = 0;
  /// Phases per run; more are refused (API) or ignored (inferred).
  std::size_t max_phases = kMaxRunPhases;
  /// How often the open run's "last seen" time is written: the end an interrupted run gets.
  double heartbeat_seconds = 10;
  /// A generator's silence is timed on the monotonic clock, less any span longer than this
  /// between two looks (ticks, sightings): loadwatch or its host was stopped then, and saw
  /// nothing. Longer than the tick interval (the daemon: 3 samples, at least 5 s).
  double max_unseen_gap_seconds = 5;
};

/// Thread-safe. One mutex guards the runs; changes queue their disk writes, which run after it
/// is released, in order (a second mutex): the API's writes on the caller's thread (it reports
/// failures), all others (inferred runs, the heartbeat) on the book's own writer thread, so
/// readers, the sampler and the push listeners never wait for an fsync. A write that fails is
/// logged (and returned to the API as a warning); the run stays in memory.
class RunBook : public RunObserver {
 public:
  using Clock = std::function<double()>;  // seconds

  /// `store` may be null: runs then live in memory only. With a store, the stored runs are
  /// loaded: one still open becomes `interrupted`, ending when it was last seen; files that
  /// cannot be read are set aside and logged (RunStore::load). `clock` is the wall clock
  /// (unix seconds), `monotonic` a clock that no one sets (default: steady_clock).
  explicit RunBook(std::unique_ptr<RunStore> store = nullptr, RunBookLimits limits = {},
                   Clock clock = nullptr, Clock monotonic = nullptr);
  ~RunBook() override;

  /// The outcome of a write: the run as it is now, and warnings (e.g. it could not be saved).
  struct Change {
    Run run;
    std::vector<std::string> warnings;
  };
  /// Starts a run from the API, ending any run still open. With an id, RunConflict when a
  /// kept run has it; with an instant, RunRequestError when it is far from now (check_instant).
  Change start_run(const StartRunRequest& request);
  /// Opens the next phase of the open run; RunConflict when none is open or it is full, or
  /// when `run_id` is given and the open run is another one (a client acts on its own run).
  Change add_phase(const PhaseRequest& request, const std::optional<std::string>& run_id = {});
  /// Ends the open run; RunConflict when none is open, or it is not `run_id` when given.
  Change stop_run(const std::optional<std::string>& run_id = {}, const StopRequest& request = {});
  /// Sets the hosts the open run `run_id` takes part on (a run another client opened here,
  /// joined elsewhere); RunConflict unless it is the open run.
  Change set_hosts(const std::string& run_id, const HostsRequest& request);

  std::optional<Run> current() const;
  std::optional<Run> find(const std::string& id) const;
  /// The open run first, then the finished ones, newest start first.
  std::vector<Run> list() const;
  /// One page of list(): up to `limit` runs after the run `after` (from the start when empty),
  /// copied without their phases unless `with_phases` (phase_count says how many); with
  /// phases, the page ends before the run that would take it past `max_phases` (it holds at
  /// least one run), so a page costs a bounded copy whatever the runs hold.
  struct Page {
    std::vector<Run> runs;
    std::vector<std::size_t> phase_counts;  // per run, also when its phases are left out
    std::string next;   // the id to pass as `after` for the next page; empty on the last
    bool found = true;  // false: `after` is no run kept (it left the history)
  };
  Page page(const std::string& after, std::size_t limit, bool with_phases,
            std::size_t max_phases = kMaxRunPhases) const;
  /// What /metrics shows, copied each sample: the open run with its current phase, and the
  /// finished run that ended last (not whole runs: a long run's phases stay where they are).
  struct Exposed {
    struct Open {
      std::string id, name, origin;
      double start = 0;
      std::optional<RunPhase> phase;
    };
    struct Ended {
      std::string id;
      double start = 0, end = 0;
    };
    std::optional<Open> current;
    std::optional<Ended> last_finished;
  };
  Exposed exposed() const;

  /// Called every sample: ends inferred runs whose generator went quiet, and writes the open
  /// run's last-seen time every heartbeat.
  void tick(double now);
  /// Writes the open run's last-seen time and everything queued now, on this thread (clean
  /// shutdown).
  void checkpoint();

  // RunObserver: inferred runs (docs/runs.md).
  void generator_seen(const GeneratorSighting& sighting) override;
  void generator_run_started(const std::string& origin, const std::string& name,
                             double at) override;
  void generator_run_ended(const std::string& origin, double at) override;
  void finished_run_seen(const std::string& origin, const std::string& name, double start,
                         double end) override;

 private:
  /// A file to write (or delete, when `run` is empty) once the state lock is released.
  struct Write {
    std::string id;
    std::optional<Run> run;
  };
  struct Origin {
    double last_seen = 0;   // unix seconds: where its run ends when it goes quiet
    double seen_awake = 0;  // the same moment on awake_locked()'s clock
    double stale_after = 30;
    std::optional<double> ramp_started;  // when the generator began changing its users
  };

  /// Opens a run (ending the open one), with `id` when given (else one made from its start);
  /// null, with `why`, when its writer has no room left.
  Run* open_locked(const std::string& origin, const std::string& name,
                   std::map<std::string, std::string> labels, double at, std::string* why,
                   const std::string& id = "");
  /// Deletes the writer's oldest runs old enough to go until one more run of `bytes` fits;
  /// false (and why) when it cannot.
  bool make_room_locked(const std::string& writer, std::size_t bytes, double now, std::string* why);
  /// Deletes `writer`'s oldest runs (old enough) beyond its share; used after loading.
  void trim_locked(const std::string& writer, double now);
  /// Ends the open run (if any); returns it as finished.
  std::optional<Run> close_locked(double at);
  void add_phase_locked(std::string name, std::optional<std::int64_t> users, double at);
  void add_finished_locked(Run run);
  /// Ends the open inferred run whose generator was not seen for its stale_after, counted
  /// on awake_locked(): a step of the wall clock or a pause of loadwatch is no silence.
  void end_stale_locked();
  /// Seconds loadwatch was awake to see generators (ClockWatch), now.
  double awake_locked() { return clocks_.look(now(), monotonic_()).awake; }
  bool inside_api_run_locked(double start, double end) const;
  std::string unique_id_locked(double start, const std::string& name) const;
  bool id_taken_locked(const std::string& id) const;
  void save_locked(const Run& run);
  /// RunConflict unless a run is open and, when `run_id` is given, it is that run.
  void check_open_locked(const std::optional<std::string>& run_id) const;
  /// Writes what is queued, on this thread.
  std::vector<std::string> flush_pending();
  /// Hands what is queued to the writer thread.
  void write_later() {
    if (store_) writer_wake_.notify_one();
  }
  void writer_loop();
  double now() const { return clock_(); }

  const RunBookLimits limits_;
  const Clock clock_;
  const Clock monotonic_;

  mutable std::mutex mutex_;  // guards everything below except the store
  std::optional<Run> current_;
  std::vector<Run> finished_;  // by start, oldest first
  std::map<std::string, Origin> origins_;
  ClockWatch clocks_;
  std::vector<Write> pending_;  // in the order the changes happened

  std::mutex io_mutex_;  // held while writing; taken before mutex_, never while holding it
  std::unique_ptr<RunStore> store_;
  std::condition_variable writer_wake_;  // with mutex_: pending_ or stop_writer_ changed
  bool stop_writer_ = false;
  std::thread writer_;  // only with a store
};

}  // namespace loadwatch
