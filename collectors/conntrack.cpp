#include "collectors/conntrack.h"

#include "procfs/conntrack.h"

namespace loadwatch {

namespace {

class ConntrackCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    // Metric names follow node_exporter's conntrack collector (node_nf_conntrack_entries,
    // node_nf_conntrack_entries_limit).
    const auto fill = read_conntrack(ctx.proc);
    if (!fill) return;
    out.gauge("loadwatch_nf_conntrack_entries",
              "Connection-tracking entries in use (sys/net/netfilter/nf_conntrack_count).", {},
              fill->entries);
    out.gauge("loadwatch_nf_conntrack_entries_limit",
              "Size limit of the connection-tracking table (net.netfilter.nf_conntrack_max).", {},
              fill->limit);
  }
};

}  // namespace

std::unique_ptr<Collector> make_conntrack_collector(const CollectorEnv&) {
  return std::make_unique<ConntrackCollector>();
}

}  // namespace loadwatch
