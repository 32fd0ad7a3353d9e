#pragma once
// Collector "sources": the pull sources of the config (Mountebank, Locust, Prometheus
// endpoints), each scraped on its own thread; collect() copies their latest results.

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "sources/source_runner.h"

namespace loadwatch {

/// The scraper for a source kind ("mountebank", "locust", "prometheus"); null if unknown.
/// `runs` (may be null) hears what a generator's scrapes show of its test runs.
std::unique_ptr<SourceScraper> make_source_scraper(const std::string& kind,
                                                   RunObserver* runs = nullptr);

/// Builds the "sources" collector: one SourceRunner per env.config.sources entry, started at
/// once. Per source it exports loadwatch_source_up{source,kind},
/// loadwatch_source_scrape_duration_seconds, loadwatch_source_last_success_timestamp_seconds,
/// loadwatch_source_errors_total{reason} (every reason, from 0),
/// loadwatch_source_dropped_series_total, and the families of the last successful scrape.
/// collect() never touches the network: it reads each runner's snapshot (a shared_ptr copy
/// under a mutex). Reconfigure keeps the runner (and its counters) of a source whose name,
/// kind and URL are unchanged.
std::unique_ptr<Collector> make_sources_collector(const CollectorEnv& env);

}  // namespace loadwatch
