#include "collectors/sockstat.h"

#include <unistd.h>

#include <string>

#include "collectors/host_file.h"
#include "procfs/sockstat.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class SockstatCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const SockstatTcp s = sockstat_.read_and_parse(ctx.proc, parse_sockstat);
    std::uint64_t inuse = s.inuse;
    // sockstat6 is absent when IPv6 is disabled: then there is no IPv6 part to add.
    if (sockstat6_.read(ctx.proc, text6_) == 0) {
      try {
        inuse += parse_sockstat6_tcp_inuse(text6_).value_or(0);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(ctx.proc.path("net/sockstat6") + ": " + e.what());
      }
    }
    out.gauge("loadwatch_sockstat_tcp_inuse",
              "TCP sockets in use, IPv4 (sockstat TCP inuse) plus IPv6 (sockstat6 TCP6 inuse).", {},
              static_cast<double>(inuse));
    out.gauge("loadwatch_sockstat_tcp_orphan",
              "TCP sockets no longer attached to a file descriptor (sockstat TCP orphan).", {},
              static_cast<double>(s.orphan));
    out.gauge("loadwatch_sockstat_tcp_time_wait",
              "Time-wait mini sockets, IPv4 and IPv6 (sockstat TCP tw).", {},
              static_cast<double>(s.tw));
    out.gauge("loadwatch_sockstat_tcp_alloc", "TCP sockets allocated (sockstat TCP alloc).", {},
              static_cast<double>(s.alloc));
    // "mem" is tcp_memory_allocated in pages (compare with net.ipv4.tcp_mem, also pages).
    out.gauge("loadwatch_sockstat_tcp_memory_bytes",
              "Memory allocated to TCP socket buffers (sockstat TCP mem pages x page size).", {},
              static_cast<double>(s.mem_pages) * static_cast<double>(page_size_));
  }

 private:
  long page_size_ = ::sysconf(_SC_PAGESIZE);
  HostFile sockstat_{"net/sockstat"};
  HostFile sockstat6_{"net/sockstat6"};
  std::string text6_;
};

}  // namespace

std::unique_ptr<Collector> make_sockstat_collector(const CollectorEnv&) {
  return std::make_unique<SockstatCollector>();
}

}  // namespace loadwatch
