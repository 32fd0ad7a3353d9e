#pragma once
// loadwatch_run_* families: the open run and its current phase, and the last finished run.
// At most two runs and one phase are exported, whatever the history holds.

#include "metrics/metric_sink.h"
#include "runs/run_book.h"

namespace loadwatch {

void add_run_metrics(const RunBook::Exposed& runs, MetricSink& out);

}  // namespace loadwatch
