#pragma once
// A Prometheus server as a series source: /api/v1/query_range over libcurl, so a fleet (many
// hosts, one Prometheus) and runs older than the daemon's history get the same report.

#include <memory>

#include "report/series_source.h"
#include "sources/http_fetch.h"

namespace loadwatch::report {

struct PrometheusSourceOptions {
  std::string url;              // the server's base URL, e.g. http://prom:9090
  std::string instance;         // narrows every query to this instance label (empty: any)
  double step_seconds = 1;      // the query's resolution; raised so no query asks > 11000 points
  std::chrono::milliseconds timeout{10000};
};

class PrometheusSeriesSource : public SeriesSource {
 public:
  explicit PrometheusSeriesSource(PrometheusSourceOptions options);
  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override;

 private:
  PrometheusSourceOptions options_;
  std::unique_ptr<HttpFetcher> http_;
};

/// `selector` percent-encoded for a query string.
std::string url_encode(const std::string& s);

/// The series of a query_range answer (matrix). Throws SeriesSourceError naming what is wrong.
std::vector<LabeledSeries> parse_query_range(const std::string& body);

}  // namespace loadwatch::report
