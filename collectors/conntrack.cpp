#include "collectors/conntrack.h"

#include <string>

#include "collectors/sysctl.h"

namespace loadwatch {

namespace {

class ConntrackCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    // Metric names follow node_exporter's conntrack collector (node_nf_conntrack_entries,
    // node_nf_conntrack_entries_limit); PRODUCT.md names the data, not the series.
    std::string count, max;
    if (ctx.proc.read("sys/net/netfilter/nf_conntrack_count", count) != 0) return;
    if (ctx.proc.read("sys/net/netfilter/nf_conntrack_max", max) != 0) return;
    out.gauge("loadwatch_nf_conntrack_entries",
              "Connection-tracking entries in use (sys/net/netfilter/nf_conntrack_count).", {},
              parse_sysctl_number(count));
    out.gauge("loadwatch_nf_conntrack_entries_limit",
              "Size limit of the connection-tracking table (net.netfilter.nf_conntrack_max).", {},
              parse_sysctl_number(max));
  }
};

}  // namespace

std::unique_ptr<Collector> make_conntrack_collector(const CollectorEnv&) {
  return std::make_unique<ConntrackCollector>();
}

}  // namespace loadwatch
