#pragma once
// The fleet's latency in the report from the daemons: each generator host's request-duration
// histogram over each phase, read from its loadwatch's history (GET /api/v1/history), which
// keeps the buckets as Prometheus would. Each loadwatch's report carries quantiles only, and
// quantiles of hosts cannot be merged; buckets can.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/fleet_report.h"
#include "cli/run_client.h"

namespace loadwatch::report {

/// One GET /api/v1/history answer: the time column and one column per series (NaN: a gap).
struct HistoryAnswer {
  std::vector<double> time;
  std::vector<std::string> series;
  std::vector<std::vector<double>> values;
};

/// Throws std::runtime_error when `body` is not such an answer (columns of unequal length,
/// a value that is not a number or null).
HistoryAnswer parse_history_answer(const std::string& body);

/// Column `column`'s last value at or before `at` (not a gap), and its time.
std::optional<std::pair<double, double>> last_at_or_before(const HistoryAnswer& answer,
                                                           std::size_t column, double at);

/// Fills phase_histograms, histogram_spans and the reasons of every generator host of `hosts`
/// (roles as infer_role gives them), when there are several: each one's buckets at the edges
/// of the fleet's stable window of each phase (the first generator host's, moved to the host's
/// clock with the skews), summed over its sources. `clients[h]` reads host h. A host whose
/// history cannot give them says why, per host or per phase; nothing is ever guessed.
void read_history_histograms(std::vector<analysis::FleetHost>& hosts,
                             const std::vector<const RunClient*>& clients);

}  // namespace loadwatch::report
