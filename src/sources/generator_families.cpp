#include "sources/generator_families.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace loadwatch {

namespace {

using F = GeneratorFamily;
constexpr auto kCounter = prometheus::MetricType::Counter;
constexpr auto kGauge = prometheus::MetricType::Gauge;
constexpr auto kSummary = prometheus::MetricType::Summary;
constexpr auto kHistogram = prometheus::MetricType::Histogram;

}  // namespace

const std::vector<GeneratorFamilySpec>& generator_families() {
  static const std::vector<GeneratorFamilySpec> families = {
      {F::kRequests, "loadwatch_generator_requests_total", kCounter,
       "Requests the load generator made in the whole test."},
      {F::kFailures, "loadwatch_generator_failures_total", kCounter,
       "Requests of the load generator that failed, whole test."},
      {F::kLatency, "loadwatch_generator_latency_seconds", kSummary,
       "Response time of all requests: quantiles as the load generator reports them "
       "(Locust: over the whole test; JMeter: over its last send interval); _count and "
       "_sum over the whole test."},
      {F::kCurrentLatency, "loadwatch_generator_current_latency_seconds", kSummary,
       "Response time of all requests: quantiles over the generator's recent window (Locust: "
       "10 s) as reported; _count and _sum over the whole test."},
      {F::kLatencyMin, "loadwatch_generator_latency_min_seconds", kGauge,
       "Fastest response time of the last reporting interval, as reported."},
      {F::kLatencyMax, "loadwatch_generator_latency_max_seconds", kGauge,
       "Slowest response time of the last reporting interval, as reported."},
      {F::kLatencyAvg, "loadwatch_generator_latency_avg_seconds", kGauge,
       "Mean response time of the last reporting interval, as reported."},
      {F::kEndpointRequests, "loadwatch_generator_endpoint_requests_total", kCounter,
       "Requests the load generator made, per request name and method."},
      {F::kEndpointFailures, "loadwatch_generator_endpoint_failures_total", kCounter,
       "Failed requests of the load generator, per request name and method."},
      {F::kEndpointLatency, "loadwatch_generator_endpoint_latency_seconds", kSummary,
       "Response time per request name and method: quantiles as reported (Locust: over "
       "the whole test; JMeter: over its last send interval); _count and _sum over the "
       "whole test."},
      {F::kEndpointLatencyMin, "loadwatch_generator_endpoint_latency_min_seconds", kGauge,
       "Fastest response time per request name in the last reporting interval."},
      {F::kEndpointLatencyMax, "loadwatch_generator_endpoint_latency_max_seconds", kGauge,
       "Slowest response time per request name in the last reporting interval."},
      {F::kEndpointLatencyAvg, "loadwatch_generator_endpoint_latency_avg_seconds", kGauge,
       "Mean response time per request name in the last reporting interval."},
      {F::kUsers, "loadwatch_generator_users", kGauge, "Simulated users the load generator runs."},
      {F::kRequestsPerSecond, "loadwatch_generator_requests_per_second", kGauge,
       "Requests per second, as the load generator reports it."},
      {F::kRunning, "loadwatch_generator_running", kGauge,
       "1 while the load generator is spawning or running a test."},
      {F::kWorkers, "loadwatch_generator_workers", kGauge,
       "Workers connected to the load generator's master."},
      {F::kSentBytes, "loadwatch_generator_sent_bytes_total", kCounter,
       "Bytes the load generator sent."},
      {F::kReceivedBytes, "loadwatch_generator_received_bytes_total", kCounter,
       "Bytes the load generator received."},
      {F::kRunStart, "loadwatch_generator_run_start_timestamp_seconds", kGauge,
       "Unix time the last test run started (JMeter's start annotation)."},
      {F::kRunEnd, "loadwatch_generator_run_end_timestamp_seconds", kGauge,
       "Unix time the last test run ended (JMeter's end annotation)."},
      {F::kDataAge, "loadwatch_generator_data_age_seconds", kGauge,
       "How old the generator's figures of this sample are: the sample's time minus the "
       "generator's own timestamp of them (pushes), or minus the arrival of the last answer "
       "(scrapes)."},
      {F::kDataAgeUncertainty, "loadwatch_generator_data_age_uncertainty_seconds", kGauge,
       "The figures may be up to this much older than the age says (Locust's /stats/requests "
       "cache: 2; whole-second Graphite timestamps: 1)."},
      {F::kRequestDuration, "loadwatch_generator_request_duration_seconds", kHistogram,
       "Response time of all requests since the generator started, in fixed buckets (0.1 ms "
       "to 235 s, twelve per doubling), as the generator counted them."},
  };
  return families;
}

namespace {

const GeneratorFamilySpec& spec_of(GeneratorFamily family) {
  const GeneratorFamilySpec& spec = generator_families().at(static_cast<std::size_t>(family));
  if (spec.family != family) throw std::logic_error("generator_families() out of enum order");
  return spec;
}

}  // namespace

void add_generator_sample(MetricSink& out, GeneratorFamily family, Labels labels, double value) {
  const GeneratorFamilySpec& spec = spec_of(family);
  if (spec.type == kCounter) {
    out.counter(spec.name, spec.help, std::move(labels), value);
  } else if (spec.type == kGauge) {
    out.gauge(spec.name, spec.help, std::move(labels), value);
  } else {
    throw std::logic_error(std::string(spec.name) + " is neither counter nor gauge");
  }
}

prometheus::ClientMetric& add_generator_summary(MetricSink& out, GeneratorFamily family,
                                                Labels labels, double requests,
                                                double sum_seconds) {
  const GeneratorFamilySpec& spec = spec_of(family);
  if (spec.type != kSummary) throw std::logic_error(std::string(spec.name) + " is no summary");
  auto& m = out.add(spec.name, spec.help, kSummary, std::move(labels));
  m.summary.sample_count = requests >= 1.8e19 ? UINT64_MAX : static_cast<std::uint64_t>(requests);
  m.summary.sample_sum = sum_seconds;
  return m;
}

const std::vector<double>& request_duration_bounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b;
    for (int k = 0; k <= 254; ++k) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", 1e-4 * std::exp2(k / 12.0));
      b.push_back(std::strtod(text, nullptr));
    }
    return b;
  }();
  return bounds;
}

void add_generator_histogram(MetricSink& out, Labels labels, const std::vector<double>& counts,
                             double sum_seconds) {
  const auto& bounds = request_duration_bounds();
  if (counts.size() != bounds.size() + 1) {
    throw std::invalid_argument("request duration histogram: " + std::to_string(counts.size()) +
                                " counts for " + std::to_string(bounds.size() + 1) + " buckets");
  }
  const GeneratorFamilySpec& spec = spec_of(GeneratorFamily::kRequestDuration);
  auto& m = out.add(spec.name, spec.help, kHistogram, std::move(labels));
  auto clamp = [](double n) {
    return n >= 1.8e19 ? UINT64_MAX : n > 0 ? static_cast<std::uint64_t>(n) : std::uint64_t{0};
  };
  double total = 0;
  m.histogram.bucket.reserve(bounds.size());
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    total += counts[i];
    prometheus::ClientMetric::Bucket b;
    b.upper_bound = bounds[i];
    b.cumulative_count = clamp(total);
    m.histogram.bucket.push_back(b);
  }
  total += counts.back();
  m.histogram.sample_count = clamp(total);  // the +Inf bucket the exposition adds
  m.histogram.sample_sum = sum_seconds;
}

}  // namespace loadwatch
