#pragma once
// A run as a Prometheus server remembers it, from loadwatch's own run metrics: its start,
// each phase's start and users, and its end.

#include <map>
#include <string>

#include "report/series_source.h"
#include "runs/run.h"

namespace loadwatch::report {

/// The newest run whose id is `ref`, whose id ends in "-" + `ref`, or whose name is `ref`, seen
/// within [now - lookback, now], with every phase it exported (however short). Throws
/// SeriesSourceError when there is none, or when several instances (loadwatch daemons) exported
/// that run: the report would add their hosts together. `instance`, when given, receives the
/// instance label of the run's series (empty when the source already narrowed to one). With
/// `instances`, several instances are not refused: they are listed there (sorted), and the run
/// returned holds only its id, name and start (read it again from each instance).
Run find_prometheus_run(SeriesSource& source, const std::string& ref, double now, double lookback,
                        std::string* instance = nullptr,
                        std::vector<std::string>* instances = nullptr);

/// Run `found` (its id, name and start) as every instance exported it, by instance label
/// ("" when the source already narrowed to one): its start, phases, users and end, read with
/// one query per family for all instances at once.
std::map<std::string, Run> runs_by_instance(SeriesSource& source, const Run& found, double now);

}  // namespace loadwatch::report
