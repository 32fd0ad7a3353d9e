#pragma once
// The byte budget of /metrics that push sources, textfiles and re-exported families share:
// each within every series cap, they could still make a page of hundreds of MB (long label
// values on many series). Sizes are estimates of the text exposition, before gzip.

#include <prometheus/metric_family.h>

#include <cstddef>
#include <vector>

namespace loadwatch {

/// Bytes one metric (all its series) of family `name` takes in the text exposition,
/// estimated: names, labels and values as written, escaping not counted.
std::size_t exposition_bytes(const prometheus::ClientMetric& metric, const std::string& name,
                             prometheus::MetricType type);

/// HELP and TYPE lines of a family, estimated like exposition_bytes.
std::size_t header_bytes(const prometheus::MetricFamily& family);

/// Max-min fair shares of `budget`: each want gets min(want, s), with the largest s for which
/// the shares fit; what a small want leaves goes to the larger ones. Wants that fit in all
/// are given in full.
std::vector<std::size_t> fair_shares(const std::vector<std::size_t>& wants, std::size_t budget);

}  // namespace loadwatch
