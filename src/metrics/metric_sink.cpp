#include "metrics/metric_sink.h"

namespace loadwatch {

namespace {
std::vector<prometheus::ClientMetric::Label> to_labels(Labels labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (auto& [name, value] : labels) out.push_back({std::move(name), std::move(value)});
  return out;
}
}  // namespace

std::size_t MetricSink::family_for(const std::string& name, const std::string& help,
                                   prometheus::MetricType type) {
  auto [it, inserted] = index_.try_emplace(name, families_.size());
  if (inserted) {
    families_.push_back(prometheus::MetricFamily{name, help, type, {}});
    origins_.emplace_back();
  }
  return it->second;
}

prometheus::ClientMetric& MetricSink::add(const std::string& name, const std::string& help,
                                          prometheus::MetricType type, Labels labels) {
  std::size_t i = family_for(name, help, type);
  auto& fam = families_[i];
  fam.metric.emplace_back();
  fam.metric.back().label = to_labels(std::move(labels));
  origins_[i].push_back(origin_);
  return fam.metric.back();
}

void MetricSink::gauge(const std::string& name, const std::string& help, Labels labels,
                       double value) {
  add(name, help, prometheus::MetricType::Gauge, std::move(labels)).gauge.value = value;
}

void MetricSink::counter(const std::string& name, const std::string& help, Labels labels,
                         double value) {
  add(name, help, prometheus::MetricType::Counter, std::move(labels)).counter.value = value;
}

void MetricSink::merge(prometheus::MetricFamily family, std::uint16_t origin) {
  auto found = index_.find(family.name);
  if (found != index_.end() && families_[found->second].type != family.type) {
    std::uint16_t id = origin & static_cast<std::uint16_t>(~kForeignOrigin);
    double n = 0;
    for (const auto& m : family.metric) n += double(series_count(m, family.type));
    if (n > 0) notes_[{id, drop_reason::kTypeConflict}] += n;
    return;
  }
  std::size_t i = family_for(family.name, family.help, family.type);
  auto& fam = families_[i];
  auto& origins = origins_[i];
  origins.insert(origins.end(), family.metric.size(), origin);
  if (fam.metric.empty()) {
    fam.metric = std::move(family.metric);
  } else {
    for (auto& m : family.metric) fam.metric.push_back(std::move(m));
  }
}

void MetricSink::family(prometheus::MetricFamily family) { merge(std::move(family), origin_); }

void MetricSink::foreign(prometheus::MetricFamily family) {
  merge(std::move(family), static_cast<std::uint16_t>(origin_ | kForeignOrigin));
}

void MetricSink::append(std::vector<prometheus::MetricFamily> families) {
  for (auto& f : families) family(std::move(f));
}

void MetricSink::note_dropped(std::string_view reason, double n) {
  if (n > 0) notes_[{origin_, std::string(reason)}] += n;
}

std::vector<prometheus::MetricFamily> MetricSink::take() {
  index_.clear();
  origins_.clear();
  return std::move(families_);
}

std::vector<prometheus::MetricFamily> MetricSink::take(SeriesOrigins& origins) {
  index_.clear();
  origins = std::move(origins_);
  origins_.clear();
  return std::move(families_);
}

}  // namespace loadwatch
