#include "collectors/loadavg.h"

#include "collectors/host_file.h"
#include "procfs/loadavg.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class LoadavgCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const LoadAvg l = file_.read_and_parse(ctx.proc, parse_loadavg);
    out.gauge("loadwatch_load1", "1 minute load average (procfs loadavg).", {}, l.load1);
    out.gauge("loadwatch_load5", "5 minute load average (procfs loadavg).", {}, l.load5);
    out.gauge("loadwatch_load15", "15 minute load average (procfs loadavg).", {}, l.load15);
  }

 private:
  HostFile file_{"loadavg"};
};

}  // namespace

std::unique_ptr<Collector> make_loadavg_collector(const CollectorEnv&) {
  return std::make_unique<LoadavgCollector>();
}

}  // namespace loadwatch
