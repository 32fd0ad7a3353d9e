#pragma once
// Pull source kind "prometheus": any text-format endpoint, re-exported with a `source` label.

#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <vector>

#include "sources/source_runner.h"

namespace loadwatch {

/// The Accept header for text-format endpoints: format 0.0.4 only, so a server that can
/// negotiate OpenMetrics or protobuf answers in the format parse_prom_text reads.
inline constexpr const char* kPromTextAccept = "text/plain;version=0.0.4;q=1,*/*;q=0.1";

/// Adds source="NAME" as the first label of every metric. An existing `source` label is
/// renamed `exported_source` (again prefixed while that name is taken too), as Prometheus
/// does with target labels under honor_labels: false.
void add_source_label(std::vector<prometheus::MetricFamily>& families, const std::string& source);

/// GET {url} (the whole URL, path included), parse, re-export every family, names, HELP and
/// TYPE untouched (a family without HELP gets one naming the source, for promtool's lint).
std::unique_ptr<SourceScraper> make_prometheus_scraper();

}  // namespace loadwatch
