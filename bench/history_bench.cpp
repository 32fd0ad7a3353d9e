// history_bench: the in-memory history's memory, its cost per sample, and the history
// endpoint's latency.
//
// 1. Memory: a History with the daemon's defaults (7200 points) fed 2 hours of samples shaped
//    like 10 targets and 5 sources (a Locust generator with 6 quantiles and a Mountebank mock
//    each) on this host's CPU count; prints the RSS growth (VmRSS before and after) and the
//    bytes the columns hold. Budget: 16 MiB.
// 2. Cost per sample: a real Sampler (the default collectors plus 10 targets on this process)
//    takes SAMPLES samples without the history, then SAMPLES with it; prints the thread CPU time
//    per sample of each and of record() alone, so the history's share of a sample shows.
// 3. Endpoint: GET /api/v1/history for 1 hour of 50 series (rate=1), built REQUESTS times;
//    prints the wall p50/p99 and the thread CPU time p50/p99 per answer in ms (on a shared
//    machine the CPU figure is the steady one). Budget: 5 ms p99.
// 4. The sampler against readers: record() every 20 ms (the daemon: every second) into the
//    full history, alone, while two threads ask for 1 hour of 50 series back to back, and
//    while two threads only spin (the same competition for the cores, no lock); prints
//    record()'s wall p50/p99/max in µs, so a sampler waiting on a reader's lock shows, and
//    the points kept aside for that reason.
// --endpoint-only skips 2; --dump FILE writes the last answer of 3 (to compare encoders).
//
// Usage: history_bench [--samples N] [--requests N] [--endpoint-only] [--dump FILE]
// Output: key=value lines.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/cpu_clock.h"
#include "config/options.h"
#include "flags.h"
#include "history/history.h"
#include "metrics/metric_sink.h"
#include "routes/live_routes.h"
#include "sampler/sampler.h"
#include "web/http_server.h"

using namespace loadwatch;
using loadwatch::bench::thread_cpu_seconds;

namespace {

// A sample's timestamp: samples land a few ms off the second, as the sampler's do.
double sample_time(int i) { return 1e9 + i + (i * 37 % 11) * 1e-3; }

// CPU seconds of a target: clock ticks (1/100 s), 37 to 39 of them a second.
double cpu_ticks_seconds(int i, int k) { return 1e3 * (k + 1) + (37.0 * i + (i + k) % 3) / 100; }

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// One sample shaped like the daemon's: the kept families for 10 targets, the host and 5
// sources, plus families the history leaves alone.
std::vector<prometheus::MetricFamily> synthetic_sample(int i, int cpus) {
  MetricSink out;
  double t = i;
  for (int k = 0; k < 10; ++k) {
    std::string target = "target" + std::to_string(k);
    for (const char* mode : {"user", "system"}) {
      out.counter("loadwatch_process_cpu_seconds_total", "h", {{"target", target}, {"mode", mode}},
                  cpu_ticks_seconds(i, k) / (mode[0] == 'u' ? 1 : 3));
    }
    out.gauge("loadwatch_process_resident_memory_bytes", "h", {{"target", target}}, 1e8 + t);
    out.gauge("loadwatch_process_open_fds", "h", {{"target", target}}, 100 + i % 7);
    out.gauge("loadwatch_process_max_fds", "h", {{"target", target}}, 65536);
    out.gauge("loadwatch_process_threads", "h", {{"target", target}}, 20);
    out.gauge("loadwatch_target_processes", "h", {{"target", target}}, 4);
    out.gauge("loadwatch_process_virtual_memory_bytes", "not kept", {{"target", target}}, 1);
  }
  const char* modes[] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};
  for (int c = 0; c < cpus; ++c) {
    for (const char* mode : modes) {
      out.counter("loadwatch_cpu_seconds_total", "h", {{"cpu", std::to_string(c)}, {"mode", mode}},
                  1e6 + t * 0.1);
    }
  }
  const char* states[] = {"ESTABLISHED", "SYN_SENT",  "SYN_RECV", "FIN_WAIT1",
                          "FIN_WAIT2",   "TIME_WAIT", "CLOSE",    "CLOSE_WAIT",
                          "LAST_ACK",    "LISTEN",    "CLOSING"};
  for (const char* st : states)
    out.gauge("loadwatch_tcp_connections", "h", {{"state", st}}, i % 50);
  out.counter("loadwatch_tcp_listen_overflows_total", "h", {}, t);
  out.counter("loadwatch_tcp_listen_drops_total", "h", {}, t);
  out.gauge("loadwatch_tcp_ephemeral_port_usage_ratio", "h", {}, 0.01);
  for (int s = 0; s < 5; ++s) {
    std::string source = "source" + std::to_string(s);
    out.gauge("loadwatch_generator_requests_per_second", "h", {{"source", source}}, 500);
    out.counter("loadwatch_generator_requests_total", "h", {{"source", source}}, 500 * t);
    out.counter("loadwatch_generator_failures_total", "h", {{"source", source}}, t);
    out.gauge("loadwatch_generator_users", "h", {{"source", source}}, 50);
    out.counter("loadwatch_mock_requests_total", "h", {{"source", source}, {"imposter", "2525"}},
                500 * t);
  }
  auto families = out.take();
  // Quantiles as Locust reports them (a summary per source).
  for (int s = 0; s < 5; ++s) {
    prometheus::MetricFamily f;
    f.name = "loadwatch_generator_latency_seconds";
    f.type = prometheus::MetricType::Summary;
    prometheus::ClientMetric m;
    m.label.push_back({"source", "source" + std::to_string(s)});
    for (double q : {0.5, 0.75, 0.9, 0.95, 0.99, 1.0}) m.summary.quantile.push_back({q, q / 10});
    f.metric.push_back(m);
    families.push_back(f);
  }
  return families;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 200, requests = 1000;
  bool endpoint_only = false;
  const char* dump = nullptr;  // writes the last answer there, to compare encoders
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--requests") && i + 1 < argc)
      requests = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--endpoint-only"))
      endpoint_only = true;
    else if (!std::strcmp(argv[i], "--dump") && i + 1 < argc)
      dump = argv[++i];
  }
  requests = std::max(requests, 1);
  int cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

  // 1. Memory over 2 hours at 1 s.
  std::vector<std::vector<prometheus::MetricFamily>> ring_of_samples;
  for (int i = 0; i < 16; ++i) ring_of_samples.push_back(synthetic_sample(i, cpus));
  long before = rss_kib();
  auto history = std::make_unique<History>();
  double record_cpu = 0;
  for (int i = 0; i < 7200; ++i) {
    auto fam = synthetic_sample(i, cpus);
    double c0 = thread_cpu_seconds();
    history->record(fam, sample_time(i));
    record_cpu += thread_cpu_seconds() - c0;
  }
  long after = rss_kib();
  std::printf(
      "history_memory points=%zu series=%zu cpus=%d rss_growth_kib=%ld column_kib=%zu "
      "budget_kib=16384\n",
      history->size(), history->list().size(), cpus, after - before,
      history->column_bytes() / 1024);
  std::printf("history_record synthetic_us_per_sample=%.1f\n", record_cpu / 7200 * 1e6);

  // 3. The endpoint: 1 hour of 50 series.
  std::string names;
  int n = 0;
  for (const auto& s : history->list()) {
    if (n == 50) break;
    names += (n++ ? "," : "") + s.key;
  }
  HttpRequest req;
  req.query = "rate=1&since=" + std::to_string(1e9 + 7200 - 3600 - 0.5) + "&series=";
  for (char c : names) {
    char buf[4];
    std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
    req.query += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? std::string(1, c) : buf;
  }
  std::vector<double> ms, query_ms;
  {
    HistoryQuery hq;
    for (const auto& s : history->list()) {
      if (hq.select.size() == 50) break;
      hq.select.push_back({s.key, {}});
    }
    hq.since = 1e9 + 7200 - 3600 - 0.5;
    hq.rate = true;
    for (int i = 0; i < 50; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto cols = history->query(hq);
      query_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::vector<double> cpu_ms;
  std::size_t bytes = 0;
  for (int i = 0; i < requests; ++i) {
    double c0 = thread_cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    auto r = history_response(*history, req);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu_ms.push_back((thread_cpu_seconds() - c0) * 1e3);
    if (r.status != 200) {
      std::fprintf(stderr, "history_bench: endpoint answered %d: %s\n", r.status, r.body.c_str());
      return 1;
    }
    bytes = r.body.size();
    if (dump && i + 1 == requests) std::ofstream(dump, std::ios::binary) << r.body;
  }
  std::printf(
      "history_endpoint series=%d points=3600 bytes=%zu requests=%d p50_ms=%.2f "
      "p99_ms=%.2f cpu_p50_ms=%.2f cpu_p99_ms=%.2f query_alone_p50_ms=%.2f "
      "budget_p99_ms=5\n",
      n, bytes, requests, percentile(ms, 0.5), percentile(ms, 0.99), percentile(cpu_ms, 0.5),
      percentile(cpu_ms, 0.99), percentile(query_ms, 0.5));

  // 4. record() into the full history, alone and with two readers asking back to back.
  auto record_wall_us = [&](int count, int base) {
    std::vector<double> us;
    for (int i = 0; i < count; ++i) {
      auto fam = synthetic_sample(base + i, cpus);
      auto t0 = std::chrono::steady_clock::now();
      history->record(fam, sample_time(base + i));
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return us;
  };
  // Two threads beside record(): readers of the history, or spinners that take the same CPU
  // without its lock, so what the lock adds shows apart from the competition for the cores.
  auto beside = [&](bool read, int base, long* reads) {
    std::atomic<bool> stop{false};
    std::atomic<long> count{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&] {
        while (!stop.load()) {
          if (read) {
            history_response(*history, req);
          } else {
            auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3);
            while (std::chrono::steady_clock::now() < until) {
            }
          }
          count.fetch_add(1);
        }
      });
    }
    auto us = record_wall_us(100, base);
    stop = true;
    for (auto& t : threads) t.join();
    *reads = count.load();
    return us;
  };
  auto alone_us = record_wall_us(100, 7200);
  long reads = 0, spins = 0;
  auto contended_us = beside(true, 7300, &reads);
  auto spun_us = beside(false, 7400, &spins);
  std::printf(
      "record_under_readers samples=100 reads=%ld alone_p50_us=%.1f alone_p99_us=%.1f "
      "alone_max_us=%.1f with_readers_p50_us=%.1f with_readers_p99_us=%.1f "
      "with_readers_max_us=%.1f with_spinners_p50_us=%.1f with_spinners_p99_us=%.1f "
      "with_spinners_max_us=%.1f deferred_points=%zu\n",
      reads, percentile(alone_us, 0.5), percentile(alone_us, 0.99), percentile(alone_us, 1.0),
      percentile(contended_us, 0.5), percentile(contended_us, 0.99), percentile(contended_us, 1.0),
      percentile(spun_us, 0.5), percentile(spun_us, 0.99), percentile(spun_us, 1.0),
      history->deferred_points());
  if (endpoint_only) return 0;
  history.reset();

  // 2. A real sampler, without and with the history.
  Options options;
  for (int k = 0; k < 10; ++k) {
    options.targets.push_back("t" + std::to_string(k) + "=pid:" + std::to_string(getpid()));
  }
  HttpServerSettings hs;
  hs.listen_address = "127.0.0.1:0";
  HttpServer http(hs);
  Sampler sampler(options, effective_config(options), &http);
  History live;
  auto run = [&](int count) {
    double total = 0;
    for (int i = 0; i < count; ++i) {
      double c0 = thread_cpu_seconds();
      sampler.sample_once();
      total += thread_cpu_seconds() - c0;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // distinct timestamps
    }
    return total / count * 1e6;
  };
  run(3);  // warm up: first samples open files
  double without = run(samples);
  sampler.set_history(&live);
  double with = run(samples);
  // record() alone on the sampler's real families.
  auto snap = sampler.latest();
  History alone;
  double c0 = thread_cpu_seconds();
  for (int i = 0; i < samples; ++i) alone.record(snap->families(), 1e9 + i);
  double record_us = (thread_cpu_seconds() - c0) / samples * 1e6;
  std::printf(
      "sampler samples=%d series_kept=%zu cpu_us_per_sample_without=%.1f "
      "cpu_us_per_sample_with=%.1f record_us=%.1f record_share=%.3f\n",
      samples, live.list().size(), without, with, record_us, record_us / without);
  return 0;
}
