#pragma once
// A Prometheus server as a series source: /api/v1/query_range over libcurl, so a fleet (many
// hosts, one Prometheus) and runs older than the daemon's history get the same report.

#include <memory>
#include <optional>

#include "report/series_source.h"
#include "sources/http_fetch.h"

namespace loadwatch::report {

struct PrometheusSourceOptions {
  std::string url;       // the server's base URL, e.g. http://prom:9090
  std::string instance;  // narrows every query to this instance label (empty: any)
  /// Narrows every query too: matchers as parse_label_matchers() writes them (empty: none).
  std::string matchers;
  double step_seconds = 1;  // the query's resolution; raised so no query asks > 11000 points
  std::chrono::milliseconds timeout{10000};
};

class PrometheusSeriesSource : public SeriesSource {
 public:
  explicit PrometheusSeriesSource(PrometheusSourceOptions options);
  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override;
  /// One instant query, last_over_time(SELECTOR[to - from]) at `to`: it reads every sample,
  /// so a series that lived for one scrape is found whatever the range. Points are at `to`.
  std::vector<LabeledSeries> fetch_last(const std::string& family,
                                        const std::map<std::string, std::string>& match,
                                        double from, double to) override;

  /// fetch() of a PromQL expression over selector()s, e.g. sum by (job, instance, mode) (...):
  /// its series must keep the job and instance labels, by which they are restamped. The
  /// samples taken in [from, to], read up to kScrapeLagSeconds past `to`.
  std::vector<LabeledSeries> fetch_expression(const std::string& query, double from, double to);
  /// The answer of an instant query at `at`, labels as Prometheus gives them.
  std::vector<LabeledSeries> instant(const std::string& query, double at);
  /// `family{match..., instance, matchers}`: the selector every query of this source uses.
  std::string selector(const std::string& family,
                       const std::map<std::string, std::string>& match) const;

 private:
  std::string get(const std::string& path_and_query);
  std::vector<LabeledSeries> query_range(const std::string& query, double from, double to);

  struct SampleTimes {
    double from = 0, to = 0;
    std::vector<LabeledSeries> series;
  };
  std::optional<SampleTimes> sample_times_;  // of the last range fetched; a report reads one

  PrometheusSourceOptions options_;
  std::unique_ptr<HttpFetcher> http_;
};

/// How far past the end of a range its query_range reads. A sample taken by the end may be
/// scraped after it: without this, a scrape in the seconds after the end that still carries
/// such a sample would be missed, and with it a run's last counts, which the daemon's history
/// has. Samples taken after the end are dropped. Two default sample intervals.
inline constexpr double kScrapeLagSeconds = 2.0;

/// `selector` percent-encoded for a query string.
std::string url_encode(const std::string& s);

/// The step of a query_range over [from, to]: at least `min_step`, and coarse enough that
/// Prometheus's limit of 11000 points holds once the step is written in milliseconds.
double query_step(double from, double to, double min_step);

/// Moves each point of `series` (a query_range answer, job and instance labels still on) from
/// its step to the time loadwatch took the sample it holds. `sample_times` is
/// loadwatch_last_sample_timestamp_seconds over the same steps: every series of one scrape
/// comes from one sample, so at each step it tells that sample's time, per job and instance.
/// A sample seen at several steps is kept once; a point whose step has no sample time is
/// dropped. With no sample times at all (not a loadwatch), the points stay on the steps.
void restamp_to_samples(std::vector<LabeledSeries>& series,
                        const std::vector<LabeledSeries>& sample_times);

/// The series of an instant query's answer (vector), one point each. Throws SeriesSourceError.
std::vector<LabeledSeries> parse_query_vector(const std::string& body);

/// The series of a query_range answer (matrix). Throws SeriesSourceError naming what is wrong.
std::vector<LabeledSeries> parse_query_range(const std::string& body);

}  // namespace loadwatch::report
