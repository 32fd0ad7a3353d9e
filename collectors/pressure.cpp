#include "collectors/pressure.h"

#include <cerrno>
#include <iterator>
#include <stdexcept>
#include <string>

#include "collectors/host_file.h"
#include "procfs/pressure.h"

namespace loadwatch {

namespace {

struct Resource {
  const char* file;
  const char* waiting_help;
  const char* stalled_help;
};

constexpr Resource kResources[] = {
    {"cpu", "Seconds at least one runnable task waited for a CPU (procfs pressure/cpu some).",
     "Seconds all non-idle tasks waited for a CPU at once (procfs pressure/cpu full; 0 "
     "host-wide, meaningful in cgroups)."},
    {"memory",
     "Seconds at least one task stalled on memory: reclaim, swap-in, refaults (procfs "
     "pressure/memory some).",
     "Seconds all non-idle tasks stalled on memory at once (procfs pressure/memory full)."},
    {"io", "Seconds at least one task stalled on I/O (procfs pressure/io some).",
     "Seconds all non-idle tasks stalled on I/O at once (procfs pressure/io full)."},
};

class PressureCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    for (std::size_t i = 0; i < std::size(kResources); ++i) {
      const Resource& r = kResources[i];
      const std::string& rel = files_[i].relative();
      int err = files_[i].read(ctx.proc, text_);
      // No PSI in this kernel (ENOENT), or booted with psi=0 (EOPNOTSUPP): no data.
      if (err == ENOENT || err == EOPNOTSUPP) continue;
      if (err != 0)
        throw std::runtime_error(ctx.proc.path(rel) + ": read failed, errno " +
                                 std::to_string(err));
      Pressure p;
      try {
        p = parse_pressure(text_);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(ctx.proc.path(rel) + ": " + e.what());
      }
      const std::string base = std::string("loadwatch_pressure_") + r.file;
      if (p.some_total_us) {
        out.counter(base + "_waiting_seconds_total", r.waiting_help, {},
                    static_cast<double>(*p.some_total_us) / 1e6);
      }
      if (p.full_total_us) {
        out.counter(base + "_stalled_seconds_total", r.stalled_help, {},
                    static_cast<double>(*p.full_total_us) / 1e6);
      }
    }
  }

 private:
  // In kResources' order.
  HostFile files_[std::size(kResources)] = {HostFile("pressure/cpu"), HostFile("pressure/memory"),
                                            HostFile("pressure/io")};
  std::string text_;  // reused: three small reads a sample, no allocation after the first
};

}  // namespace

std::unique_ptr<Collector> make_pressure_collector(const CollectorEnv&) {
  return std::make_unique<PressureCollector>();
}

}  // namespace loadwatch
