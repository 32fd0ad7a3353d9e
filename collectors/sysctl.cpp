#include "collectors/sysctl.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collectors/host_file.h"
#include "procfs/sysctl.h"

namespace loadwatch {

namespace {

class SysctlCollector final : public Collector {
 public:
  SysctlCollector() {
    for (std::string_view name : kExportedSysctls) {
      std::string rel = "sys/";
      for (char c : name) rel += c == '.' ? '/' : c;
      files_.emplace_back(std::move(rel));
    }
  }

  void collect(SampleContext& ctx, MetricSink& out) override {
    for (std::size_t i = 0; i < files_.size(); ++i) {
      const std::string_view name = kExportedSysctls[i];
      const std::string& rel = files_[i].relative();
      if (files_[i].read(ctx.proc, buf_) != 0) continue;
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
  std::vector<HostFile> files_;  // in kExportedSysctls' order
  std::string buf_;
};

}  // namespace

std::unique_ptr<Collector> make_sysctl_collector(const CollectorEnv&) {
  return std::make_unique<SysctlCollector>();
}

}  // namespace loadwatch
