#include "collectors/filefd.h"

#include "collectors/host_file.h"
#include "procfs/file_nr.h"
#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

namespace {

class FilefdCollector final : public Collector {
 public:
  void collect(SampleContext& ctx, MetricSink& out) override {
    const FileNr f = file_.read_and_parse(ctx.proc, parse_file_nr);
    out.gauge("loadwatch_filefd_allocated",
              "File handles allocated system-wide (procfs sys/fs/file-nr, first field).", {},
              static_cast<double>(f.allocated));
    out.gauge("loadwatch_filefd_maximum",
              "Maximum number of file handles, fs.file-max (procfs sys/fs/file-nr, third field).",
              {}, static_cast<double>(f.maximum));
  }

 private:
  HostFile file_{"sys/fs/file-nr"};
};

}  // namespace

std::unique_ptr<Collector> make_filefd_collector(const CollectorEnv&) {
  return std::make_unique<FilefdCollector>();
}

}  // namespace loadwatch
