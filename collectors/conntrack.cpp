#include "collectors/conntrack.h"

#include <string>

#include "collectors/host_file.h"
#include "procfs/conntrack.h"

namespace loadwatch {

namespace {

class ConntrackCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    // Metric names follow node_exporter's conntrack collector (node_nf_conntrack_entries,
    // node_nf_conntrack_entries_limit).
    // Either file missing: nf_conntrack is not loaded, no data.
    if (count_.read(ctx.proc, count_text_) != 0 || max_.read(ctx.proc, max_text_) != 0) return;
    const ConntrackFill fill = parse_conntrack(ctx.proc, count_text_, max_text_);
    out.gauge("loadwatch_nf_conntrack_entries",
              "Connection-tracking entries in use (sys/net/netfilter/nf_conntrack_count).", {},
              fill.entries);
    out.gauge("loadwatch_nf_conntrack_entries_limit",
              "Size limit of the connection-tracking table (net.netfilter.nf_conntrack_max).", {},
              fill.limit);
  }

 private:
  HostFile count_{std::string(kConntrackCountFile)};
  HostFile max_{std::string(kConntrackMaxFile)};
  std::string count_text_, max_text_;
};

}  // namespace

std::unique_ptr<Collector> make_conntrack_collector(const CollectorEnv&) {
  return std::make_unique<ConntrackCollector>();
}

}  // namespace loadwatch
