// influx_ingest_bench — InfluxDB line-protocol ingest on one core (target >= 200,000
// lines/s).
//
// Builds bodies shaped like JMeter 5.x InfluxdbBackendListenerClient writes (per interval: the
// aggregate, all/ok/ko points per transaction, a responseCode point for failing ones, the
// internal thread point; escaped names; ns timestamps), then, on one thread pinned to one CPU,
// times what POST /write does to a body: parse + JMeterModel update under its lock. Parse
// alone is timed too, to show where the time goes.
//
// Usage: influx_ingest_bench [--transactions 50] [--lines 2000000] [--body-lines 5000]
//                            [--cpu 0]
// Output, one key=value line each:
//   influx_ingest lines=2000000 bodies=400 cpu_s=3.1 lines_per_s=645000 target=200000 ok=1
//   influx_parse_only lines=2000000 cpu_s=2.0 lines_per_s=1000000
// Exit status 1 when lines_per_s is below the target.
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cpu_clock.h"
#include "push/influx_line_protocol.h"
#include "push/jmeter_model.h"

using namespace loadwatch;
using loadwatch::bench::thread_cpu_seconds;

namespace {

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "influx_ingest_bench: %s\n", msg);
  std::fprintf(stderr,
               "usage: influx_ingest_bench [--transactions N] [--lines N] [--body-lines N] "
               "[--cpu N]\n");
  std::exit(2);
}

// One JMeter send interval (about 3 * transactions + 3 lines).
void append_interval(std::string& out, int transactions, long long ts_ns, int seq) {
  char buf[512];
  auto line = [&](int n) { out.append(buf, static_cast<size_t>(n)); };
  line(std::snprintf(buf, sizeof buf,
                     "jmeter,application=shop,transaction=all,statut=all count=%d,countError=%d,"
                     "avg=12.5,min=1.0,max=80.0,hit=%d,sb=45600,rb=987650,pct90.0=30.0,"
                     "pct95.0=40.0,pct99.0=48.0 %lld\n",
                     10 * transactions, seq % 7, 10 * transactions, ts_ns));
  for (int t = 0; t < transactions; ++t) {
    const char* status[] = {"all", "ok", "ko"};
    for (int s = 0; s < 3; ++s) {
      if (s == 2 && (t + seq) % 5 != 0) continue;  // only some transactions fail
      line(std::snprintf(buf, sizeof buf,
                         "jmeter,application=shop,transaction=POST\\ /api/cart/%d\\,v2,statut=%s "
                         "count=%d,avg=%d.25,min=1.0,max=%d.0,hit=10,sb=456,rb=9876,pct90.0=%d.5,"
                         "pct95.0=%d.5,pct99.0=%d.5 %lld\n",
                         t, status[s], s == 2 ? 1 : 10, 5 + t % 13, 60 + t, 20 + t % 7, 30 + t % 5,
                         40 + t % 3, ts_ns));
    }
    if ((t + seq) % 5 == 0) {
      line(
          std::snprintf(buf, sizeof buf,
                        "jmeter,application=shop,transaction=POST\\ /api/cart/%d\\,v2,"
                        "responseCode=500,responseMessage=Internal\\ Server\\ Error count=1 %lld\n",
                        t, ts_ns));
    }
  }
  line(std::snprintf(buf, sizeof buf,
                     "jmeter,application=shop,transaction=internal minAT=50,maxAT=50,meanAT=50,"
                     "startedT=50,endedT=0 %lld\n",
                     ts_ns));
}

size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int transactions = 50;
  long long total_lines = 2000000;
  long long body_lines = 5000;
  int cpu = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> long long {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return std::atoll(argv[++i]);
    };
    if (a == "--transactions") {
      transactions = static_cast<int>(next());
    } else if (a == "--lines") {
      total_lines = next();
    } else if (a == "--body-lines") {
      body_lines = next();
    } else if (a == "--cpu") {
      cpu = static_cast<int>(next());
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (transactions < 1 || total_lines < 1 || body_lines < 1) usage("values must be positive");

  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("sched_setaffinity (ignored)");

  // Bodies of about body_lines lines each, like successive POSTs of one listener.
  std::vector<std::string> bodies;
  long long made = 0;
  int seq = 0;
  long long ts = 1700000000000000000LL;
  while (made < total_lines) {
    std::string body;
    size_t lines = 0;
    while (static_cast<long long>(lines) < body_lines &&
           made + static_cast<long long>(lines) < total_lines) {
      append_interval(body, transactions, ts, seq++);
      ts += 5000000000LL;
      lines = count_lines(body);
    }
    made += static_cast<long long>(lines);
    bodies.push_back(std::move(body));
  }

  // Parse + model, as the /write handler does.
  JMeterModel model("influx");
  size_t taken = 0, malformed = 0;
  double t0 = thread_cpu_seconds();
  for (const auto& body : bodies) {
    auto out = model.ingest_influx("bench", body, 1700000000.0, 1);
    taken += out.taken;
    malformed += out.malformed;
  }
  double ingest_s = thread_cpu_seconds() - t0;

  // Parse only.
  size_t points = 0;
  std::function<void(const InfluxPoint&)> on_point = [&](const InfluxPoint&) { ++points; };
  std::function<void(const InfluxParseError&)> on_error = [&](const InfluxParseError&) {};
  t0 = thread_cpu_seconds();
  for (const auto& body : bodies) parse_influx_lines(body, on_point, on_error);
  double parse_s = thread_cpu_seconds() - t0;

  if (malformed != 0 || taken != static_cast<size_t>(made) || points != taken) {
    std::fprintf(stderr,
                 "influx_ingest_bench: generated body did not parse cleanly "
                 "(taken=%zu malformed=%zu points=%zu lines=%lld)\n",
                 taken, malformed, points, made);
    return 2;
  }
  const double target = 200000;
  double rate = static_cast<double>(made) / ingest_s;
  std::printf(
      "influx_ingest lines=%lld bodies=%zu transactions=%d cpu_s=%.3f lines_per_s=%.0f "
      "target=%.0f ok=%d\n",
      made, bodies.size(), transactions, ingest_s, rate, target, rate >= target ? 1 : 0);
  std::printf("influx_parse_only lines=%lld cpu_s=%.3f lines_per_s=%.0f\n", made, parse_s,
              static_cast<double>(made) / parse_s);
  return rate >= target ? 0 : 1;
}
