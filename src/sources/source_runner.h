#pragma once
// A pull source (Mountebank, Locust, a Prometheus endpoint) scraped on its own thread and
// schedule, off the /metrics path; collect() only reads its latest published snapshot.

#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "metrics/series_guard.h"
#include "sources/http_fetch.h"

namespace loadwatch {

/// One GET of a scrape.
struct SourceRequest {
  std::string url;
  std::string accept;
  /// A failed answer is handed to process() instead of failing the scrape (e.g. Mountebank
  /// versions without /metrics answer 404 there).
  bool optional = false;
};

/// What one scrape produced: families (already carrying the `source` label) or an error.
struct ScrapeResult {
  FetchError error = FetchError::None;
  std::string message;
  std::vector<prometheus::MetricFamily> families;
  /// Series the kind read but did not keep (its parse caps), by reason.
  DropCounts dropped;
  /// Set by kinds whose figures describe the moment their answer left the peer, give or take
  /// this many seconds (Locust: its 2 s answer cache): the figures' age is then exported
  /// from the answer's arrival (loadwatch_generator_data_age_seconds).
  std::optional<double> data_age_uncertainty;
  /// Unix time the figures describe, at the latest, when that is not the last answer's
  /// arrival (Locust: its uncached counts come before the answer that carries its state).
  double data_time = 0;
  /// Set when the answers cannot be used yet: nothing is published, and the same requests
  /// are made again after this many seconds (Locust: a cached state older than the counts).
  std::optional<double> retry_in;
};

/// One kind of source. Kinds do no I/O: they name their requests and map the answers, so
/// they are tested on fixtures and fuzzed without a network. Owned by one SourceRunner and
/// called only from its thread, so a kind keeps state (counter carries) without locks.
class SourceScraper {
 public:
  virtual ~SourceScraper() = default;
  /// The GETs of one scrape, in order.
  virtual std::vector<SourceRequest> requests(const SourceConfig& config) const = 0;
  /// Maps the answers (one per request, same order) to families. Never throws on any body:
  /// a malformed one is FetchError::Parse with a message.
  virtual ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) = 0;
};

/// The latest state of a source as collect() exports it. Immutable once published.
struct SourceSnapshot {
  std::uint64_t scrapes = 0;    // finished scrapes (success or failure)
  bool up = false;              // the last scrape succeeded
  double duration_seconds = 0;  // of the last scrape
  double last_success = 0;      // unix time of the last success, 0 = never
  /// Unix time the last successful scrape's last answer arrived, and the kind's uncertainty
  /// of its figures' time (ScrapeResult::data_age_uncertainty); unset for other kinds.
  double answer_arrived = 0;
  std::optional<double> data_age_uncertainty;
  /// Errors so far, indexed like kFetchErrorReasons.
  std::array<double, std::size(kFetchErrorReasons)> errors{};
  /// Series dropped (max_series cap, parse caps, repeats), by reason, summed over scrapes.
  DropCounts dropped_series;
  /// The last failure, kept while the source is up again: the landing page and the API
  /// show why it was last down.
  FetchError last_error_kind = FetchError::None;
  std::string last_error;  // its message, for logs and the API
  /// Families of the last scrape when it succeeded; empty while the source is down (stale
  /// numbers of a dead peer are worse than none).
  std::vector<prometheus::MetricFamily> families;
};

/// What the runner does with the families of a successful scrape: guard_families (repeated
/// series, bad or oversized labels; UTF-8 is left to the sampler's guard, which counts it per
/// collector), then cap_series at config.max_series. Adds the drops to `dropped`.
void finish_scrape(std::vector<prometheus::MetricFamily>& families, const SourceConfig& config,
                   DropCounts& dropped);

/// Reads the source's password or bearer token file (if any) into `options`. False with
/// `error` naming the file and the cause (never the secret) when it cannot be used.
bool read_credentials(const SourceAuth& auth, FetchOptions& options, std::string& error);

/// Runs one source: a thread that scrapes every `interval` (the first scrape at once) with
/// its own reused HTTP handle. snapshot() and the setters are safe from any thread. The
/// destructor stops and joins; a transfer in flight is abandoned within ~50 ms.
class SourceRunner {
 public:
  SourceRunner(SourceConfig config, std::unique_ptr<SourceScraper> scraper);
  ~SourceRunner();
  SourceRunner(const SourceRunner&) = delete;
  SourceRunner& operator=(const SourceRunner&) = delete;

  /// Non-blocking: asks the thread to stop (call on every runner, then destroy them, so
  /// many sources stop in parallel).
  void request_stop();

  /// Changes interval, timeout, limits, TLS and auth of a source whose name, kind and URL
  /// are unchanged; its counters continue. Takes effect from the next scrape.
  void set_config(const SourceConfig& config);
  SourceConfig config() const;

  std::shared_ptr<const SourceSnapshot> snapshot() const;

  /// Waits until at least `n` scrapes have finished in total; false on timeout (tests).
  bool wait_for_scrapes(std::uint64_t n, std::chrono::milliseconds timeout) const;

 private:
  void run();
  void publish(std::shared_ptr<const SourceSnapshot> snap);

  std::unique_ptr<SourceScraper> scraper_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;  // guards config_, snapshot_
  mutable std::condition_variable changed_;
  SourceConfig config_;
  std::shared_ptr<const SourceSnapshot> snapshot_;
  std::set<std::string> warned_;  // drop reasons logged (runner thread only)
  std::thread thread_;
};

}  // namespace loadwatch
