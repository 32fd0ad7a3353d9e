#pragma once
// The loadwatch_generator_* families: what a load generator reports about its own run, whichever
// kind feeds them (Locust, pulled by sources/locust.cpp; JMeter, pushed to push/jmeter_model.cpp).
// Names, types and HELP are written here once, so that a daemon fed by both kinds exposes one
// HELP per family.

#include <prometheus/client_metric.h>
#include <prometheus/metric_type.h>

#include "metrics/metric_sink.h"

namespace loadwatch {

enum class GeneratorFamily {
  kRequests,
  kFailures,
  kLatency,
  kCurrentLatency,
  kLatencyMin,
  kLatencyMax,
  kLatencyAvg,
  kEndpointRequests,
  kEndpointFailures,
  kEndpointLatency,
  kEndpointLatencyMin,
  kEndpointLatencyMax,
  kEndpointLatencyAvg,
  kUsers,
  kRequestsPerSecond,
  kRunning,
  kWorkers,
  kSentBytes,
  kReceivedBytes,
  kRunStart,
  kRunEnd,
  kDataAge,
  kDataAgeUncertainty,
  kRequestDuration,
};

struct GeneratorFamilySpec {
  GeneratorFamily family;
  const char* name;
  prometheus::MetricType type;
  const char* help;
};

/// Every family, in enum order.
const std::vector<GeneratorFamilySpec>& generator_families();

/// Adds one sample of a counter or gauge family. Throws std::logic_error for a summary family.
void add_generator_sample(MetricSink& out, GeneratorFamily family, Labels labels, double value);

/// Adds one sample of a summary family with _count `requests` (clamped to the uint64 range) and
/// _sum `sum_seconds`; the caller appends the quantiles, in seconds, to the returned sample.
/// Throws std::logic_error for a family that is not a summary.
prometheus::ClientMetric& add_generator_summary(MetricSink& out, GeneratorFamily family,
                                                Labels labels, double requests, double sum_seconds);

/// Upper bounds (seconds) of the kRequestDuration buckets, +Inf not included: 0.1 ms to 235 s,
/// twelve per doubling (1e-4 * 2^(k/12), k = 0..254, rounded to 3 significant digits so that
/// the `le` labels stay short). The Locust listener (scripts/locust/loadwatch_listener.py)
/// computes the same list. A quantile interpolated within one bucket is off by at most the
/// bucket's width, 6 %, and in practice by far less (docs/sources.md gives the measurement).
const std::vector<double>& request_duration_bounds();

/// Adds one sample of the kRequestDuration histogram. `counts` holds the requests per bucket
/// (not cumulative), one per bound of request_duration_bounds() and one more for the
/// overflow (+Inf); a different size throws std::invalid_argument.
void add_generator_histogram(MetricSink& out, Labels labels, const std::vector<double>& counts,
                             double sum_seconds);

}  // namespace loadwatch
