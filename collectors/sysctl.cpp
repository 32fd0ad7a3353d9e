#include "collectors/sysctl.h"

#include <stdexcept>
#include <string>

#include "procfs/sysctl.h"

namespace loadwatch {

namespace {

class SysctlCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    for (std::string_view name : kExportedSysctls) {
      std::string rel = "sys/";
      for (char c : name) rel += c == '.' ? '/' : c;
      if (ctx.proc.read(rel, buf_) != 0) continue;
      double v = 0;
      try {
        v = parse_sysctl_number(buf_);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(ctx.proc.path(rel) + ": " + e.what());
      }
      out.gauge("loadwatch_sysctl", "Kernel tunable in force (procfs sys/).",
                {{"name", std::string(name)}}, v);
    }
  }

 private:
  std::string buf_;
};

}  // namespace

std::unique_ptr<Collector> make_sysctl_collector(const CollectorEnv&) {
  return std::make_unique<SysctlCollector>();
}

}  // namespace loadwatch
