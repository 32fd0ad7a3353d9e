#pragma once
// Collector "targets": per-process metrics of the configured targets.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "targets" collector for env.config.targets. It reads below env.proc (the
/// per-process files) and env.sys (unit: cgroups). It fills SampleContext::targets, so it
/// must run first. Throws std::runtime_error when the procfs root cannot be opened.
///
/// Exports, per target (label target="NAME"): loadwatch_target_up, _processes,
/// _restarts_total, _partial_reads_total and the loadwatch_process_* metrics (docs/metrics.md)
/// except loadwatch_process_tcp_connections (the tcp collector's).
/// The per-process gauges only while the target is up; the counters always.
std::unique_ptr<Collector> make_targets_collector(const CollectorEnv& env);

}  // namespace loadwatch
