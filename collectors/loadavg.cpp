#include "collectors/loadavg.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

LoadAvg parse_loadavg(std::string_view text) {
  // One line; the kernel prints fixed-point values as "%lu.%02lu" (fs/proc/loadavg.c), so a
  // plain decimal without exponent is all that is accepted.
  std::string_view line = next_line(text);
  LoadAvg l;
  l.load1 = to_nonneg_double(next_field(line), "load1");
  l.load5 = to_nonneg_double(next_field(line), "load5");
  l.load15 = to_nonneg_double(next_field(line), "load15");
  return l;
}

namespace {

class LoadavgCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const LoadAvg l = read_and_parse(ctx.proc, "loadavg", parse_loadavg);
    out.gauge("loadwatch_load1", "1 minute load average (procfs loadavg).", {}, l.load1);
    out.gauge("loadwatch_load5", "5 minute load average (procfs loadavg).", {}, l.load5);
    out.gauge("loadwatch_load15", "15 minute load average (procfs loadavg).", {}, l.load15);
  }
};

}  // namespace

std::unique_ptr<Collector> make_loadavg_collector(const CollectorEnv&) {
  return std::make_unique<LoadavgCollector>();
}

}  // namespace loadwatch
