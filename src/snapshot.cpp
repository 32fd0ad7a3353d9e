#include "snapshot.h"

#include <prometheus/text_serializer.h>

#include <sstream>

#include "gzip.h"

namespace loadwatch {

Snapshot::Snapshot(std::vector<prometheus::MetricFamily> families,
                   std::vector<TargetState> targets, double timestamp)
    : families_(std::move(families)), targets_(std::move(targets)), timestamp_(timestamp) {}

const std::string& Snapshot::text() const {
  std::call_once(text_once_, [this] {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, families_);
    text_ = std::move(out).str();
  });
  return text_;
}

const std::string& Snapshot::gzipped() const {
  std::call_once(gzip_once_, [this] { gzip_ = gzip_compress(text()); });
  return gzip_;
}

}  // namespace loadwatch
