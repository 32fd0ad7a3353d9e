#pragma once
// The report of a run across hosts as ONE self-contained HTML file: the same sentences and
// tables as its text and markdown (analysis::fleet_document, written once), every string
// escaped, no script and nothing fetched, so it opens from disk as a CI artifact.

#include <string>

#include "analysis/fleet_report.h"

namespace loadwatch::report {

std::string render_fleet_html(const analysis::FleetReport& report);

}  // namespace loadwatch::report
