#pragma once
// `loadwatch report --url A --url B ...`: one report of a run across the hosts of a test, each
// watched by its own loadwatch.

#include <string>
#include <vector>

#include "cli/client_flags.h"
#include "report/prometheus_series_source.h"
#include "report/series_source.h"
#include "runs/run.h"

namespace loadwatch::report {

/// Reads run `run_ref` (empty: the first loadwatch's newest run with phases) from every
/// loadwatch and writes the fleet report in `format` (table, markdown, json or html). Returns the
/// exit code: 0, or 2 when a loadwatch cannot be read or lacks the run (fail closed: a report
/// that leaves a host out would judge without it).
int fleet_report(const std::vector<Daemon>& daemons, std::string run_ref, const std::string& format,
                 std::string& out);

/// The same from a Prometheus server, for run `run` (as find_prometheus_run found it) that every
/// one of `instances` exported: each instance's own run (its phases as it recorded them) over
/// its own series, read with queries batched across the instances.
int prometheus_fleet_report(const PrometheusSourceOptions& prometheus,
                            const std::vector<std::string>& instances, const Run& run, double now,
                            const RunSeriesOptions& options, const std::string& format,
                            std::string& out);

}  // namespace loadwatch::report
