#include "collectors/netstat.h"

#include "collectors/host_file.h"
#include "procfs/netstat.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

struct CounterDef {
  const char* key;     // "Prefix.Name" in the kernel file
  const char* metric;  // exported name
  const char* help;
};

// The kernel names: include/uapi/linux/snmp.h (LINUX_MIB_*) and net/ipv4/proc.c.
constexpr CounterDef kCounters[] = {
    {"TcpExt.ListenOverflows", "loadwatch_tcp_listen_overflows_total",
     "Times a listener's accept queue was full when a connection completed (TcpExt "
     "ListenOverflows)."},
    {"TcpExt.ListenDrops", "loadwatch_tcp_listen_drops_total",
     "Connection requests dropped by listeners for any reason, overflows included (TcpExt "
     "ListenDrops)."},
    {"TcpExt.TCPTimeWaitOverflow", "loadwatch_tcp_timewait_overflows_total",
     "Sockets closed without TIME_WAIT because net.ipv4.tcp_max_tw_buckets was reached (TcpExt "
     "TCPTimeWaitOverflow)."},
    {"Tcp.ActiveOpens", "loadwatch_tcp_active_opens_total",
     "Connections opened by this host: CLOSED -> SYN_SENT (snmp Tcp ActiveOpens)."},
    {"Tcp.PassiveOpens", "loadwatch_tcp_passive_opens_total",
     "Connections accepted by listeners: LISTEN -> SYN_RECV (snmp Tcp PassiveOpens)."},
    {"Tcp.RetransSegs", "loadwatch_tcp_retransmitted_segments_total",
     "TCP segments retransmitted (snmp Tcp RetransSegs)."},
    {"Tcp.OutRsts", "loadwatch_tcp_resets_sent_total",
     "TCP segments sent with RST (snmp Tcp OutRsts)."},
    {"Tcp.AttemptFails", "loadwatch_tcp_attempt_fails_total",
     "Connection attempts that failed: SYN_SENT/SYN_RECV -> CLOSED or SYN_RECV -> LISTEN (snmp "
     "Tcp AttemptFails)."},
    {"Tcp.EstabResets", "loadwatch_tcp_established_resets_total",
     "Resets of ESTABLISHED or CLOSE_WAIT connections (snmp Tcp EstabResets)."},
    {"TcpExt.SyncookiesSent", "loadwatch_tcp_syncookies_sent_total",
     "SYN cookies sent because a SYN queue was full (TcpExt SyncookiesSent)."},
};

class NetstatCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    auto values = netstat_.read_and_parse(ctx.proc, parse_netstat);
    for (auto& [k, v] : snmp_.read_and_parse(ctx.proc, parse_netstat)) values[k] = v;
    for (const auto& c : kCounters) {
      auto it = values.find(c.key);
      // An older kernel without the counter: no series rather than a fake 0.
      if (it == values.end() || it->second < 0) continue;
      out.counter(c.metric, c.help, {}, static_cast<double>(it->second));
    }
  }

 private:
  HostFile netstat_{"net/netstat"};
  HostFile snmp_{"net/snmp"};
};

}  // namespace

std::unique_ptr<Collector> make_netstat_collector(const CollectorEnv&) {
  return std::make_unique<NetstatCollector>();
}

}  // namespace loadwatch
