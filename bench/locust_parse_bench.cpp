// locust_parse_bench — Locust /stats/requests parsed and mapped to metrics (budget: a payload
// with 500 endpoints in <= 5 ms of CPU per scrape).
//
// Builds a body shaped like Locust writes it (Flask jsonify, sorted keys, indent 2; 500 rows
// — Locust's own truncation — plus the Aggregated row; 2.12 keys by default, or the 2.28
// StatsEntry.to_dict() keys), then on one thread pinned to one CPU times what one scrape
// does after the HTTP GET: parse_locust_stats + LocustMapper::map into a MetricSink, with
// the mapper (its counter carries) kept across iterations as across scrapes.
//
// Beside it, the JSON reading alone (nlohmann::json::sax_parse through read_json_events into a
// handler that only counts events): the part of a scrape a faster reader could save.
//
// Usage: locust_parse_bench [--endpoints 500] [--iterations 200] [--shape 2.12|2.28] [--cpu 0]
// Output, one key=value line each:
//   locust_parse endpoints=500 bytes=290000 iterations=200 ms_per_scrape=2.1 target_ms=5 ok=1
//   locust_parse_only ms_per_parse=1.5
//   json_read events=15050 ms_per_read=1.7
// Exit status 1 when ms_per_scrape is above the target.
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/cpu_clock.h"
#include "sources/json_events.h"
#include "sources/locust.h"

using namespace loadwatch;
using loadwatch::bench::thread_cpu_seconds;

namespace {

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "locust_parse_bench: %s\n", msg);
  std::fprintf(stderr,
               "usage: locust_parse_bench [--endpoints N] [--iterations N] [--shape 2.12|2.28] "
               "[--cpu N]\n");
  std::exit(2);
}

void append_row(std::string& out, bool modern, const char* method, const std::string& name,
                long requests, long failures, int i) {
  char buf[1024];
  double avg = 10.0 + i % 37 + 0.123456789;
  int n;
  if (modern) {
    n = std::snprintf(
        buf, sizeof buf,
        "    {\n      \"avg_content_length\": %.13f,\n      \"avg_response_time\": %.15f,\n"
        "      \"current_fail_per_sec\": %.1f,\n      \"current_rps\": %.1f,\n"
        "      \"max_response_time\": %.1f,\n      \"median_response_time\": %d,\n"
        "      \"method\": \"%s\",\n      \"min_response_time\": %.1f,\n      \"name\": \"%s\",\n"
        "      \"num_failures\": %ld,\n      \"num_requests\": %ld,\n"
        "      \"response_time_percentile_0.95\": %d,\n      \"response_time_percentile_0.99\": "
        "%d,\n"
        "      \"safe_name\": \"%s\",\n      \"total_fail_per_sec\": %.13f,\n"
        "      \"total_rps\": %.13f\n    }",
        512.25 + i, avg, 0.5, 12.5, 250.0 + i, 9 + i % 5, method, 1.0, name.c_str(), failures,
        requests, 40 + i % 9, 90 + i % 13, name.c_str(), 0.1234567890123, 12.3456789012345);
  } else {
    n = std::snprintf(
        buf, sizeof buf,
        "    {\n      \"avg_content_length\": %.13f,\n      \"avg_response_time\": %.15f,\n"
        "      \"current_fail_per_sec\": %.1f,\n      \"current_rps\": %.1f,\n"
        "      \"max_response_time\": %.1f,\n      \"median_response_time\": %d,\n"
        "      \"method\": \"%s\",\n      \"min_response_time\": %.1f,\n      \"name\": \"%s\",\n"
        "      \"ninetieth_response_time\": %d,\n      \"ninety_ninth_response_time\": %d,\n"
        "      \"num_failures\": %ld,\n      \"num_requests\": %ld,\n      \"safe_name\": \"%s\"\n"
        "    }",
        512.25 + i, avg, 0.5, 12.5, 250.0 + i, 9 + i % 5, method, 1.0, name.c_str(), 30 + i % 7,
        90 + i % 13, failures, requests, name.c_str());
  }
  out.append(buf, static_cast<size_t>(n));
}

// Counts events, so that neither reader's work can be optimised away.
class CountingHandler : public JsonHandler {
 public:
  std::size_t events = 0;
  bool begin_object() override { return ++events; }
  bool end_object() override { return ++events; }
  bool begin_array() override { return ++events; }
  bool end_array() override { return ++events; }
  bool key(std::string_view) override { return ++events; }
  bool string(std::string_view) override { return ++events; }
  bool number(double) override { return ++events; }
  bool boolean(bool) override { return ++events; }
  bool null() override { return ++events; }
};

std::string payload(int endpoints, bool modern, long tick) {
  std::string out = modern ? "{\n  \"current_response_time_percentiles\": {\n"
                             "    \"response_time_percentile_0.5\": 11,\n"
                             "    \"response_time_percentile_0.95\": 48\n  },\n"
                           : "{\n  \"current_response_time_percentile_50\": 11,\n"
                             "  \"current_response_time_percentile_95\": 48,\n";
  out += "  \"errors\": [],\n  \"fail_ratio\": 0.01,\n  \"state\": \"running\",\n  \"stats\": [\n";
  long total = 0, total_fail = 0;
  for (int i = 0; i < endpoints; ++i) {
    long req = 1000 + 37L * i + tick * (i % 11 + 1);
    long fail = req / 97;
    total += req;
    total_fail += fail;
    std::string name = "/api/v1/catalog/item-" + std::to_string(i) + "/details?view=full";
    append_row(out, modern, i % 3 ? "GET" : "POST", name, req, fail, i);
    out += ",\n";
  }
  append_row(out, modern, "", "Aggregated", total, total_fail, endpoints);
  out += "\n  ],\n  \"total_rps\": 5432.1,\n  \"user_count\": 500\n}\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int endpoints = 500, iterations = 200, cpu = 0;
  bool modern = false;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) {
      if (std::strcmp(argv[i], name) != 0) return false;
      if (i + 1 >= argc) usage("missing value");
      return true;
    };
    if (arg("--endpoints")) {
      endpoints = std::atoi(argv[++i]);
    } else if (arg("--iterations")) {
      iterations = std::atoi(argv[++i]);
    } else if (arg("--cpu")) {
      cpu = std::atoi(argv[++i]);
    } else if (arg("--shape")) {
      std::string shape = argv[++i];
      if (shape != "2.12" && shape != "2.28") usage("--shape is 2.12 or 2.28");
      modern = shape == "2.28";
    } else {
      usage("unknown argument");
    }
  }
  if (endpoints < 1 || iterations < 1) usage("counts must be positive");
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // best effort

  // Two bodies with different counts, alternated: the carries see growth every scrape.
  std::string bodies[2] = {payload(endpoints, modern, 0), payload(endpoints, modern, 1)};
  LocustMapper mapper;
  std::size_t series = 0;
  std::string error;
  for (int i = 0; i < 3; ++i) {  // warm-up
    LocustStats stats;
    if (!parse_locust_stats(bodies[i % 2], stats, error)) {
      std::fprintf(stderr, "locust_parse_bench: payload does not parse: %s\n", error.c_str());
      return 2;
    }
    MetricSink sink;
    mapper.map(stats, "locust", sink);
    mapper.end_scrape(1000000);
    series = 0;
    for (const auto& f : sink.families()) series += f.metric.size();
  }

  double t0 = thread_cpu_seconds();
  for (int i = 0; i < iterations; ++i) {
    LocustStats stats;
    parse_locust_stats(bodies[i % 2], stats, error);
    MetricSink sink;
    mapper.map(stats, "locust", sink);
    mapper.end_scrape(1000000);
  }
  double full = (thread_cpu_seconds() - t0) * 1000.0 / iterations;

  t0 = thread_cpu_seconds();
  for (int i = 0; i < iterations; ++i) {
    LocustStats stats;
    parse_locust_stats(bodies[i % 2], stats, error);
  }
  double parse_only = (thread_cpu_seconds() - t0) * 1000.0 / iterations;

  CountingHandler counted;
  t0 = thread_cpu_seconds();
  for (int i = 0; i < iterations; ++i) {
    counted.events = 0;
    if (!read_json_events(bodies[i % 2], counted, error)) return 2;
  }
  double read_only = (thread_cpu_seconds() - t0) * 1000.0 / iterations;

  const double target = 5.0;
  bool ok = full <= target;
  std::printf(
      "locust_parse endpoints=%d shape=%s bytes=%zu metrics=%zu iterations=%d "
      "ms_per_scrape=%.3f target_ms=%.0f ok=%d\n",
      endpoints, modern ? "2.28" : "2.12", bodies[0].size(), series, iterations, full, target,
      ok ? 1 : 0);
  std::printf("locust_parse_only ms_per_parse=%.3f\n", parse_only);
  std::printf("json_read events=%zu ms_per_read=%.3f\n", counted.events, read_only);
  return ok ? 0 : 1;
}
