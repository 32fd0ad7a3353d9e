#pragma once
// A run across many hosts from one Prometheus server, with a number of queries that does not
// grow with the hosts: each family is read once over the fleet's window for every instance
// (summed in PromQL by instance where the report sums anyway), and each host's report is cut
// from that. A fleet of 70 hosts costs about the queries of one.

#include <string>
#include <vector>

#include "analysis/fleet_report.h"
#include "report/prometheus_series_source.h"
#include "runs/run.h"

namespace loadwatch::report {

/// Every one of `instances`' report of run `found` (its id and start, as find_prometheus_run
/// gives it), each over that instance's own phases and series, in `instances`' order. The
/// options' instance is ignored; its matchers narrow every query. Throws SeriesSourceError.
std::vector<analysis::FleetHost> prometheus_fleet_hosts(const PrometheusSourceOptions& options,
                                                        const std::vector<std::string>& instances,
                                                        const Run& found, double now,
                                                        const RunSeriesOptions& run_options);

}  // namespace loadwatch::report
