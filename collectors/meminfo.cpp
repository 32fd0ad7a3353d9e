#include "collectors/meminfo.h"

#include "collectors/host_file.h"
#include "procfs/meminfo.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class MeminfoCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const MemInfo m = file_.read_and_parse(ctx.proc, parse_meminfo);
    out.gauge("loadwatch_memory_total_bytes", "Usable RAM in bytes (procfs meminfo MemTotal).", {},
              static_cast<double>(m.total_bytes));
    // MemAvailable exists since Linux 3.14; older kernels get no series rather than a guess.
    if (m.available_bytes) {
      out.gauge("loadwatch_memory_available_bytes",
                "Memory available for new work without swapping, in bytes (procfs meminfo "
                "MemAvailable).",
                {}, static_cast<double>(*m.available_bytes));
    }
    if (m.swap_total_bytes) {
      out.gauge("loadwatch_memory_swap_total_bytes",
                "Swap space in bytes (procfs meminfo SwapTotal).", {},
                static_cast<double>(*m.swap_total_bytes));
    }
    if (m.swap_free_bytes) {
      out.gauge("loadwatch_memory_swap_free_bytes",
                "Unused swap space in bytes (procfs meminfo SwapFree).", {},
                static_cast<double>(*m.swap_free_bytes));
    }
  }

 private:
  HostFile file_{"meminfo"};
};

}  // namespace

std::unique_ptr<Collector> make_meminfo_collector(const CollectorEnv&) {
  return std::make_unique<MeminfoCollector>();
}

}  // namespace loadwatch
