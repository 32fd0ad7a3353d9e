#include "collectors/softirqs.h"

#include "collectors/host_file.h"
#include "procfs/softirqs.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class SoftirqsCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    for (const SoftirqCount& row : file_.read_and_parse(ctx.proc, parse_softirqs)) {
      out.counter("loadwatch_softirqs_total",
                  "Softirqs handled since boot, by type, summed over CPUs (procfs softirqs).",
                  {{"type", row.type}}, static_cast<double>(row.total));
    }
  }

 private:
  HostFile file_{"softirqs"};
};

}  // namespace

std::unique_ptr<Collector> make_softirqs_collector(const CollectorEnv&) {
  return std::make_unique<SoftirqsCollector>();
}

}  // namespace loadwatch
