#pragma once
// `loadwatch run join`: a run another loadwatch has (say, inferred from Locust on the generator
// host) opened on these hosts too, and followed until it ends.

#include <chrono>
#include <string>
#include <vector>

#include "cli/run_hosts.h"

namespace loadwatch::run_command {

/// How `run join` follows another loadwatch's run.
struct JoinPlan {
  std::string run_id;                            // empty: the run open there, or the next one
  std::chrono::milliseconds wait{600'000};       // for a run to open there
  std::chrono::milliseconds poll{500};           // how often its run is read
  std::chrono::milliseconds lost_after{30'000};  // unreachable this long: the run ends here
  /// `run stop`'s flags for the joined hosts: what the guard runs if join is killed.
  std::vector<std::string> stop_args;
};

/// Opens the run `from` has on every host with its id, start and phases at the same instants
/// (each on its own clock), then follows it: each new phase and its end are copied as they
/// appear. Exits when the run ends there (0), or stops it here and exits when it is lost (1,
/// 2) or on SIGINT/SIGTERM (128+sig). From before the start to the exit a guard (as run exec's)
/// stops the run on the joined hosts if this process dies without doing so (SIGKILL, OOM).
int join_run(Host& from, std::vector<Host>& hosts, const JoinPlan& plan);

}  // namespace loadwatch::run_command
