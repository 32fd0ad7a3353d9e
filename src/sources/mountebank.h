#pragma once
// Pull source kind "mountebank": the mock's request counts per imposter (GET /imposters), its
// own imposter metrics (GET /metrics, Mountebank >= 2.7) and its process's uptime (GET
// /config), read as mb 2.9.1 writes them.

#include <prometheus/metric_family.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/metric_sink.h"
#include "metrics/series_limits.h"
#include "sources/counter_carry.h"
#include "sources/source_runner.h"

namespace loadwatch {

/// One entry of GET /imposters (Accept: application/json), e.g.
/// {"protocol": "http", "port": 3000, "name": "orders", "numberOfRequests": 7, "_links": …}.
struct MountebankImposter {
  std::string label;    // "http:3000", the `imposter` label value
  std::string name;     // optional imposter name, may be empty
  double requests = 0;  // numberOfRequests: drops to 0 when saved requests are deleted
};

/// Parses the /imposters body. False with `error` set on anything but
/// {"imposters": [{protocol, port, ...}, ...]}; entries without protocol or port are skipped.
/// At most `max_imposters` entries are kept, and none whose protocol:port is longer than
/// kMaxLabelValueBytes (a name is cut there); the others are counted in `dropped`.
bool parse_mountebank_imposters(std::string_view json, std::vector<MountebankImposter>& out,
                                std::string& error, std::size_t max_imposters = SIZE_MAX,
                                DropCounts* dropped = nullptr);

/// process.uptime of the GET /config body (seconds since mb started, from its monotonic
/// clock), or nullopt when the body is not JSON or holds no such number.
std::optional<double> parse_mountebank_uptime(std::string_view json);

/// mb labels its imposter metrics with its log prefix, "[http:3000 orders api] " (or
/// "[http:3000] " without a name); loadwatch uses "http:3000". Other text is kept as is.
std::string normalise_imposter_label(std::string_view value);

/// Whether a family of mb's /metrics is re-exported: its imposter families only
/// (mb_request_total, mb_no_match_total, the duration histograms, mb_proxy_*,
/// mb_blocked_ip_total), not the prom-client defaults mb_process_* / mb_nodejs_*, which a
/// target measures better from /proc and one of which (mb_nodejs_active_handles_total, a
/// gauge named like a counter) fails `promtool check metrics`.
bool mountebank_family_exported(std::string_view name);

/// Turns scrapes into families: loadwatch_mock_requests_total{source,imposter} (kept
/// monotonic), and when `metrics` is given (the parsed /metrics), the exported mb_*
/// families with imposter normalised and source added, plus
/// loadwatch_mock_unmatched_requests_total{source,imposter} from mb_no_match_total (0 for an
/// imposter that has no such sample yet). A restart of mb (mb_process_start_time_seconds
/// changes, or its start by note_uptime() moves) restarts every counter, even one that grew
/// past its old value while loadwatch could not see mb. One per source; not thread-safe.
class MountebankMapper {
 public:
  void map(const std::vector<MountebankImposter>& imposters,
           std::vector<prometheus::MetricFamily>* metrics, const std::string& source,
           MetricSink& out);
  /// Ends a successful scrape (see CounterCarry::end_scrape).
  void end_scrape(std::size_t keep) { carry_.end_scrape(keep); }
  /// mb's uptime from an answer that came in at steady-clock second `arrived`, `seconds` after
  /// its request was sent: mb started within [arrived - seconds - uptime, arrived - uptime].
  /// A window apart from the last answer's is another process, and the next map() restarts
  /// every counter. mb_process_start_time_seconds is rounded to the second: a restart within
  /// that second, as a quick stop and start is, leaves it the same.
  void note_uptime(double uptime, double arrived, double seconds);

 private:
  CounterCarry carry_;
  double start_time_ = 0;
  bool started_known_ = false;  // the window below is set
  bool restarted_ = false;      // note_uptime() saw another process since the last map()
  double start_low_ = 0, start_high_ = 0, start_seen_at_ = 0;
};

/// GET {url}/imposters, {url}/metrics (a 404 there is tolerated: older mb) and {url}/config
/// (any failure tolerated: the start time from /metrics still shows most restarts).
std::unique_ptr<SourceScraper> make_mountebank_scraper();

}  // namespace loadwatch
