#pragma once
// Collector "runs": the run in progress and its current phase, and the last finished run
// (loadwatch_run_*). At most two runs and one phase are exported, whatever the history holds.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "runs" collector. It also moves the run book's clock (RunBook::tick): a
/// generator that stopped being seen ends its run. Adds nothing without a run book.
std::unique_ptr<Collector> make_runs_collector(const CollectorEnv& env);

}  // namespace loadwatch
