#include "metric_sink.h"

namespace loadwatch {

namespace {
std::vector<prometheus::ClientMetric::Label> to_labels(Labels labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (auto& [name, value] : labels) out.push_back({std::move(name), std::move(value)});
  return out;
}
}  // namespace

prometheus::MetricFamily& MetricSink::family_for(const std::string& name, const std::string& help,
                                                 prometheus::MetricType type) {
  auto [it, inserted] = index_.try_emplace(name, families_.size());
  if (inserted) families_.push_back(prometheus::MetricFamily{name, help, type, {}});
  return families_[it->second];
}

prometheus::ClientMetric& MetricSink::add(const std::string& name, const std::string& help,
                                          prometheus::MetricType type, Labels labels) {
  auto& fam = family_for(name, help, type);
  fam.metric.emplace_back();
  fam.metric.back().label = to_labels(std::move(labels));
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

void MetricSink::family(prometheus::MetricFamily family) {
  auto& fam = family_for(family.name, family.help, family.type);
  if (fam.metric.empty()) {
    fam.metric = std::move(family.metric);
  } else {
    for (auto& m : family.metric) fam.metric.push_back(std::move(m));
  }
}

void MetricSink::append(std::vector<prometheus::MetricFamily> families) {
  for (auto& f : families) family(std::move(f));
}

std::vector<prometheus::MetricFamily> MetricSink::take() {
  index_.clear();
  return std::move(families_);
}

}  // namespace loadwatch
