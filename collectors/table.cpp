// The explicit list of collectors: name, default switch, factory. Order is sample order.
#include "collectors/collector.h"
#include "collectors/conntrack.h"
#include "collectors/filefd.h"
#include "collectors/graphite.h"
#include "collectors/http.h"
#include "collectors/influx.h"
#include "collectors/loadavg.h"
#include "collectors/locustpush.h"
#include "collectors/meminfo.h"
#include "collectors/netdev.h"
#include "collectors/netstat.h"
#include "collectors/pressure.h"
#include "collectors/runs.h"
#include "collectors/sockstat.h"
#include "collectors/softirqs.h"
#include "collectors/sources.h"
#include "collectors/stat.h"
#include "collectors/sysctl.h"
#include "collectors/targets.h"
#include "collectors/tcp.h"
#include "collectors/textfile.h"
#include "collectors/throttling.h"
#include "collectors/topcpu.h"
#include "collectors/vmstat.h"

namespace loadwatch {

const std::vector<CollectorSpec>& collector_table() {
  static const std::vector<CollectorSpec> table = {
      {"targets", "Per-process metrics of the configured targets", true, make_targets_collector},
      {"throttling", "CPU quota throttling of each target's cgroup (cgroup cpu.stat)", true,
       make_throttling_collector},
      {"stat", "CPU time per CPU and mode, context switches, forks, procs running/blocked", true,
       make_stat_collector},
      {"softirqs", "Softirqs by type, summed over CPUs", true, make_softirqs_collector},
      {"meminfo", "Total, available and swap memory", true, make_meminfo_collector},
      {"vmstat", "Pages swapped in and out (/proc/vmstat pswpin, pswpout)", true,
       make_vmstat_collector},
      {"pressure", "Pressure stall information: CPU, memory, I/O (/proc/pressure), when present",
       true, make_pressure_collector},
      {"loadavg", "1, 5 and 15 minute load averages", true, make_loadavg_collector},
      {"topcpu", "The busiest process names on the host by CPU (every /proc/PID/stat)", true,
       make_topcpu_collector},
      {"filefd", "File handles allocated and fs.file-max", true, make_filefd_collector},
      {"tcp", "TCP sockets by state: host, watched ports, accept queues, ephemeral ports, targets",
       true, make_tcp_collector},
      {"netstat", "TCP counters from /proc/net/netstat and /proc/net/snmp", true,
       make_netstat_collector},
      {"sockstat", "TCP socket gauges from /proc/net/sockstat", true, make_sockstat_collector},
      {"sysctl", "Network and fd kernel tunables in force", true, make_sysctl_collector},
      {"netdev", "Per-interface traffic counters from /proc/net/dev", true, make_netdev_collector},
      {"conntrack", "Netfilter conntrack entries and limit, when loaded", true,
       make_conntrack_collector},
      {"graphite", "JMeter Graphite Backend Listener (--graphite.listen-address)", true,
       make_graphite_collector},
      {"influx", "JMeter InfluxDB Backend Listener: POST /write, /api/v2/write", true,
       make_influx_collector},
      {"locustpush",
       "Locust listener plugin: POST /api/v1/push/locust (scripts/locust/loadwatch_listener.py)",
       false, make_locustpush_collector},
      {"textfile", "*.prom files of --collector.textfile.directory (e.g. wrk summaries)", true,
       make_textfile_collector},
      {"sources", "Pull sources: Mountebank, Locust, Prometheus endpoints (own threads)", true,
       make_sources_collector},
      {"http", "The web server's limits: connections, request body memory, requests turned away",
       true, make_http_collector},
      {"runs",
       "The run in progress, its phase and the last finished run (after the sources: "
       "their sightings of this sample end or phase a run)",
       true, make_runs_collector},
  };
  return table;
}

}  // namespace loadwatch
