#include "metrics/snapshot.h"

#include "metrics/exposition.h"
#include "util/gzip.h"

namespace loadwatch {

Snapshot::Snapshot(std::vector<prometheus::MetricFamily> families, std::vector<TargetState> targets,
                   double timestamp, std::vector<SourceState> sources)
    : families_(std::move(families)),
      targets_(std::move(targets)),
      sources_(std::move(sources)),
      timestamp_(timestamp) {}

const std::string& Snapshot::text() const {
  text_asked_.store(true, std::memory_order_relaxed);
  return make_text();
}

const std::string& Snapshot::gzipped() const {
  gzip_asked_.store(true, std::memory_order_relaxed);
  return make_gzip();
}

void Snapshot::prepare_like(const Snapshot& previous) const {
  if (previous.gzip_asked_.load(std::memory_order_relaxed)) make_gzip();
  if (previous.text_asked_.load(std::memory_order_relaxed)) make_text();
}

const std::string& Snapshot::make_text() const {
  std::call_once(text_once_, [this] {
    text_ = serialize_text(families_);
    text_made_ = true;
  });
  return text_;
}

const std::string& Snapshot::make_gzip() const {
  std::call_once(gzip_once_, [this] {
    gzip_ = gzip_compress(make_text());
    gzip_made_ = true;
  });
  return gzip_;
}

}  // namespace loadwatch
