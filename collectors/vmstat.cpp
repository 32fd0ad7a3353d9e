#include "collectors/vmstat.h"

#include "collectors/host_file.h"
#include "procfs/tokenizer.h"
#include "procfs/vmstat.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class VmstatCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const VmSwapCounters c = file_.read_and_parse(ctx.proc, parse_vmstat_swap);
    if (c.pswpin) {
      out.counter("loadwatch_swap_in_pages_total",
                  "Pages read in from swap space since boot (procfs vmstat pswpin).", {},
                  static_cast<double>(*c.pswpin));
    }
    if (c.pswpout) {
      out.counter("loadwatch_swap_out_pages_total",
                  "Pages written out to swap space since boot (procfs vmstat pswpout).", {},
                  static_cast<double>(*c.pswpout));
    }
  }

 private:
  HostFile file_{"vmstat"};
};

}  // namespace

std::unique_ptr<Collector> make_vmstat_collector(const CollectorEnv&) {
  return std::make_unique<VmstatCollector>();
}

}  // namespace loadwatch
