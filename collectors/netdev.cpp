#include "collectors/netdev.h"

#include "collectors/host_file.h"
#include "procfs/netdev.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class NetdevCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    for (const auto& d : file_.read_and_parse(ctx.proc, parse_netdev)) {
      auto c = [&](const char* name, const char* help, std::uint64_t v) {
        out.counter(name, help, {{"device", d.device}}, static_cast<double>(v));
      };
      c("loadwatch_network_receive_bytes_total", "Bytes received (procfs net/dev).", d.rx_bytes);
      c("loadwatch_network_receive_packets_total", "Packets received (procfs net/dev).",
        d.rx_packets);
      c("loadwatch_network_receive_drop_total", "Received packets dropped (procfs net/dev).",
        d.rx_drop);
      c("loadwatch_network_receive_errors_total", "Receive errors (procfs net/dev).", d.rx_errors);
      c("loadwatch_network_transmit_bytes_total", "Bytes sent (procfs net/dev).", d.tx_bytes);
      c("loadwatch_network_transmit_packets_total", "Packets sent (procfs net/dev).", d.tx_packets);
      c("loadwatch_network_transmit_drop_total", "Packets dropped on transmit (procfs net/dev).",
        d.tx_drop);
      c("loadwatch_network_transmit_errors_total", "Transmit errors (procfs net/dev).",
        d.tx_errors);
    }
  }

 private:
  HostFile file_{"net/dev"};
};

}  // namespace

std::unique_ptr<Collector> make_netdev_collector(const CollectorEnv&) {
  return std::make_unique<NetdevCollector>();
}

}  // namespace loadwatch
