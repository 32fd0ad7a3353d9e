#include "metrics/series_guard.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "metrics/exposition.h"
#include "metrics/page_budget.h"

namespace loadwatch {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

bool is_own(std::uint16_t origin) { return (origin & kForeignOrigin) == 0; }
std::uint16_t origin_id(std::uint16_t origin) {
  return static_cast<std::uint16_t>(origin & ~kForeignOrigin);
}

class Guard {
 public:
  Guard(std::vector<MetricFamily>& families, SeriesOrigins& origins, const GuardOptions& options,
        GuardReport& report)
      : fams_(families), origins_(origins), options_(options), report_(report) {}

  void run() {
    alive_.assign(fams_.size(), true);
    index_names();
    drop_reserved();
    drop_name_collisions();
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (alive_[i]) check_family(i);
    }
    cap_total();
    cap_bytes();
    std::size_t w = 0;
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (!alive_[i] || fams_[i].metric.empty()) continue;
      if (w != i) {
        fams_[w] = std::move(fams_[i]);
        origins_[w] = std::move(origins_[i]);
      }
      ++w;
    }
    fams_.resize(w);
    origins_.resize(w);
  }

 private:
  void count(std::uint16_t origin, const char* reason, const std::string& family, double n) {
    if (n <= 0) return;
    auto key = std::make_pair(origin_id(origin), std::string(reason));
    report_.dropped[key] += n;
    report_.example.try_emplace(std::move(key), family);
  }

  // Drops every metric of family i with `reason`.
  void drop_all(std::size_t i, const char* reason) {
    auto& f = fams_[i];
    for (std::size_t k = 0; k < f.metric.size(); ++k) {
      count(origins_[i][k], reason, f.name, double(series_count(f.metric[k], f.type)));
    }
    f.metric.clear();
    origins_[i].clear();
    alive_[i] = false;
  }

  void index_names() {
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      auto& f = fams_[i];
      if (!valid_metric_name(f.name)) {
        drop_all(i, drop_reason::kInvalidName);
        continue;
      }
      auto [it, inserted] = by_name_.emplace(f.name, i);
      if (inserted) continue;
      std::size_t first = it->second;
      if (fams_[first].type != f.type) {
        drop_all(i, drop_reason::kTypeConflict);
        continue;
      }
      for (std::size_t k = 0; k < f.metric.size(); ++k) {
        fams_[first].metric.push_back(std::move(f.metric[k]));
        origins_[first].push_back(origins_[i][k]);
      }
      f.metric.clear();
      origins_[i].clear();
      alive_[i] = false;
    }
  }

  bool has_own(std::size_t i) const {
    return std::any_of(origins_[i].begin(), origins_[i].end(), is_own);
  }
  bool has_foreign(std::size_t i) const {
    return !std::all_of(origins_[i].begin(), origins_[i].end(), is_own);
  }

  // Keeps the metrics of family i for which keep(k) is true; counts the others under
  // `reason` unless it is null.
  template <typename Keep>
  void filter(std::size_t i, const char* reason, Keep keep) {
    auto& f = fams_[i];
    auto& o = origins_[i];
    std::size_t w = 0;
    for (std::size_t k = 0; k < f.metric.size(); ++k) {
      if (!keep(k)) {
        if (reason) count(o[k], reason, f.name, double(series_count(f.metric[k], f.type)));
        continue;
      }
      if (w != k) {
        f.metric[w] = std::move(f.metric[k]);
        o[w] = o[k];
      }
      ++w;
    }
    f.metric.resize(w);
    o.resize(w);
  }

  // A family loadwatch exports keeps only loadwatch's own series in it.
  void drop_reserved() {
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (!alive_[i] || !has_own(i) || !has_foreign(i)) continue;
      filter(i, drop_reason::kReserved, [&](std::size_t k) { return is_own(origins_[i][k]); });
    }
  }

  // Summary/histogram X writes X_count, X_sum (and X_bucket): a family of one of these names
  // would repeat or split its series.
  void drop_name_collisions() {
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (!alive_[i] || fams_[i].metric.empty()) continue;
      bool histogram = fams_[i].type == MetricType::Histogram;
      if (!histogram && fams_[i].type != MetricType::Summary) continue;
      for (std::string_view suffix : {"_count", "_sum", "_bucket"}) {
        if (suffix == "_bucket" && !histogram) continue;
        auto it = by_name_.find(fams_[i].name + std::string(suffix));
        if (it == by_name_.end()) continue;
        std::size_t j = it->second;
        if (!alive_[j] || fams_[j].metric.empty() || j == i) continue;
        bool i_own = has_own(i), j_own = has_own(j);
        if (j_own && !i_own) {
          drop_all(i, drop_reason::kReserved);
          break;
        }
        drop_all(j, i_own && !j_own ? drop_reason::kReserved : drop_reason::kNameCollision);
      }
    }
  }

  static const char* label_problem(const ClientMetric& m, MetricType type) {
    if (m.label.size() > kMaxLabelsPerSeries) return drop_reason::kLabelLimit;
    for (std::size_t k = 0; k < m.label.size(); ++k) {
      const auto& l = m.label[k];
      // The value's cap holds for what /metrics writes, invalid UTF-8 repaired (fix_text).
      if (l.name.size() > kMaxLabelNameBytes || !fits_once_repaired(l.value, kMaxLabelValueBytes))
        return drop_reason::kLabelLimit;
      if (!valid_label_name(l.name) || l.name == "__name__") return drop_reason::kInvalidLabel;
      // The serializer adds these itself.
      if ((type == MetricType::Summary && l.name == "quantile") ||
          (type == MetricType::Histogram && l.name == "le"))
        return drop_reason::kInvalidLabel;
      for (std::size_t j = 0; j < k; ++j) {
        if (m.label[j].name == l.name) return drop_reason::kInvalidLabel;
      }
    }
    return nullptr;
  }

  // Quantiles or buckets of metric k: no NaN bound, no repeated bound, at most `cap`.
  // Linear: the kept list is capped.
  template <typename Points, typename Bound>
  void check_bounds(std::size_t i, std::size_t k, Points& points, Bound bound, std::size_t cap,
                    const char* cap_reason) {
    std::size_t w = 0;
    for (std::size_t r = 0; r < points.size(); ++r) {
      double b = bound(points[r]);
      const char* why = nullptr;
      if (std::isnan(b)) {
        why = drop_reason::kInvalidLabel;
      } else if (std::any_of(points.begin(), points.begin() + static_cast<std::ptrdiff_t>(w),
                             [&](const auto& p) { return bound(p) == b; })) {
        why = drop_reason::kDuplicate;
      } else if (w >= cap) {
        why = cap_reason;
      }
      if (why) {
        count(origins_[i][k], why, fams_[i].name, 1);
        continue;
      }
      points[w++] = points[r];
    }
    points.resize(w);
  }

  void check_quantiles(std::size_t i, std::size_t k) {
    check_bounds(
        i, k, fams_[i].metric[k].summary.quantile, [](const auto& q) { return q.quantile; },
        kMaxQuantilesPerSeries, drop_reason::kMaxQuantiles);
  }

  void check_buckets(std::size_t i, std::size_t k) {
    auto& bs = fams_[i].metric[k].histogram.bucket;
    check_bounds(
        i, k, bs, [](const auto& b) { return b.upper_bound; }, kMaxBucketsPerSeries,
        drop_reason::kMaxBuckets);
    // The serializer adds le="+Inf" after the last bucket unless it is +Inf: in order, it
    // is written once. Buckets nearly always come sorted: check first, as stable_sort
    // allocates a buffer on every call.
    auto below = [](const auto& a, const auto& b) { return a.upper_bound < b.upper_bound; };
    if (!std::is_sorted(bs.begin(), bs.end(), below)) std::stable_sort(bs.begin(), bs.end(), below);
  }

  void fix_text(std::string& text, std::uint16_t origin) {
    if (options_.fix_utf8 && replace_invalid_utf8(text)) {
      report_.invalid_utf8[origin_id(origin)] += 1;
    }
  }

  void check_family(std::size_t i) {
    auto& f = fams_[i];
    auto& o = origins_[i];
    if (!f.help.empty()) {
      fix_text(f.help, o.empty() ? 0 : o[0]);
      if (f.help.size() > kMaxHelpBytes) truncate_utf8(f.help, kMaxHelpBytes);
    }
    std::vector<const char*> problem(f.metric.size(), nullptr);
    for (std::size_t k = 0; k < f.metric.size(); ++k) {
      auto& m = f.metric[k];
      problem[k] = label_problem(m, f.type);
      if (problem[k]) continue;
      for (auto& l : m.label) fix_text(l.value, o[k]);
      if (f.type == MetricType::Summary) check_quantiles(i, k);
      if (f.type == MetricType::Histogram) check_buckets(i, k);
    }
    for (std::size_t k = 0; k < f.metric.size(); ++k) {
      if (problem[k]) count(o[k], problem[k], f.name, double(series_count(f.metric[k], f.type)));
    }
    filter(i, nullptr, [&](std::size_t k) { return !problem[k]; });
    if (f.metric.size() > 1) dedup(i);
  }

  // Hashes each label set (order-free: a sum of mixed per-label hashes), sorts the hashes
  // and compares label sets only where two hashes meet: no string is built per series.
  void dedup(std::size_t i) {
    auto& f = fams_[i];
    std::size_t n = f.metric.size();
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keys(n);
    std::hash<std::string_view> h;
    for (std::size_t k = 0; k < n; ++k) {
      std::uint64_t sum = 0;
      for (const auto& l : f.metric[k].label) {
        sum += mix(h(l.name) * 0x9E3779B97F4A7C15ull ^ h(l.value));
      }
      keys[k] = {sum, static_cast<std::uint32_t>(k)};
    }
    std::sort(keys.begin(), keys.end());
    std::vector<bool> repeat(n, false);
    for (std::size_t a = 0; a < n;) {
      std::size_t e = a + 1;
      while (e < n && keys[e].first == keys[a].first) ++e;
      if (e - a <= 8) {
        for (std::size_t x = a; x < e; ++x) {
          for (std::size_t y = x + 1; y < e; ++y) {  // keys[x].second < keys[y].second
            std::uint32_t p = keys[x].second, q = keys[y].second;
            if (!repeat[q] && same_labels(f.metric[p], f.metric[q])) repeat[q] = true;
          }
        }
      } else {
        // Many equal hashes (crafted collisions): sorted signatures, not pairs.
        std::set<std::string> seen;
        for (std::size_t x = a; x < e; ++x) {
          std::uint32_t p = keys[x].second;
          if (!seen.insert(signature(f.metric[p])).second) repeat[p] = true;
        }
      }
      a = e;
    }
    filter(i, drop_reason::kDuplicate, [&](std::size_t k) { return !repeat[k]; });
  }

  static std::string signature(const ClientMetric& m) {
    std::vector<const ClientMetric::Label*> sorted;
    for (const auto& l : m.label) sorted.push_back(&l);
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::string sig;
    for (const auto* l : sorted) {
      sig += l->name;
      sig.push_back('\0');
      sig += l->value;
      sig.push_back('\0');
    }
    return sig;
  }

  static std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Label names are unique within a series here (label_problem), so equal sizes and every
  // label of one found in the other mean the same set.
  static bool same_labels(const ClientMetric& a, const ClientMetric& b) {
    if (a.label.size() != b.label.size()) return false;
    for (const auto& l : a.label) {
      if (std::find(b.label.begin(), b.label.end(), l) == b.label.end()) return false;
    }
    return true;
  }

  void cap_total() {
    std::size_t total = 0;
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (!alive_[i]) continue;
      auto& f = fams_[i];
      filter(i, drop_reason::kTotalSeries, [&](std::size_t k) {
        std::size_t n = series_count(f.metric[k], f.type);
        if (total + n > options_.max_series) {
          total = options_.max_series;  // nothing after a cut is kept: page order holds
          return false;
        }
        total += n;
        return true;
      });
    }
  }

  // The budgeted origins' parts of families, cut to fair shares of options_.budget_bytes.
  void cap_bytes() {
    if (options_.budget_bytes == 0 || options_.budgeted.empty()) return;
    struct Part {
      std::size_t family;
      std::uint16_t origin;
      std::size_t slot;  // the origin's place in `wants`
      std::size_t bytes;
    };
    std::vector<Part> parts;
    std::vector<std::size_t> wants(options_.budgeted.size(), 0);
    for (std::size_t i = 0; i < fams_.size(); ++i) {
      if (!alive_[i]) continue;
      const auto& f = fams_[i];
      std::map<std::size_t, std::size_t> bytes;  // slot -> this family's bytes of that origin
      for (std::size_t k = 0; k < f.metric.size(); ++k) {
        auto it = std::find(options_.budgeted.begin(), options_.budgeted.end(),
                            origin_id(origins_[i][k]));
        if (it == options_.budgeted.end()) continue;
        bytes[static_cast<std::size_t>(it - options_.budgeted.begin())] +=
            exposition_bytes(f.metric[k], f.name, f.type);
      }
      for (const auto& [slot, b] : bytes) {
        parts.push_back({i, options_.budgeted[slot], slot, b + header_bytes(f)});
        wants[slot] += parts.back().bytes;
      }
    }
    std::size_t total = 0;
    for (std::size_t w : wants) total += w;
    if (total <= options_.budget_bytes) return;
    const auto shares = fair_shares(wants, options_.budget_bytes);
    // Smallest first: one huge family goes before many small ones do.
    std::stable_sort(parts.begin(), parts.end(),
                     [](const Part& a, const Part& b) { return a.bytes < b.bytes; });
    std::vector<std::size_t> used(wants.size(), 0);
    for (const Part& p : parts) {
      if (used[p.slot] + p.bytes <= shares[p.slot]) {
        used[p.slot] += p.bytes;
        continue;
      }
      filter(p.family, drop_reason::kPageBytes,
             [&](std::size_t k) { return origin_id(origins_[p.family][k]) != p.origin; });
    }
  }

  std::vector<MetricFamily>& fams_;
  SeriesOrigins& origins_;
  const GuardOptions& options_;
  GuardReport& report_;
  std::vector<bool> alive_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace

double GuardReport::dropped_total() const {
  double n = 0;
  for (const auto& [_, v] : dropped) n += v;
  return n;
}

std::size_t series_count(const prometheus::ClientMetric& metric, prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Histogram: {
      const auto& b = metric.histogram.bucket;
      bool has_inf = !b.empty() && b.back().upper_bound == std::numeric_limits<double>::infinity();
      return b.size() + (has_inf ? 0 : 1) + 2;
    }
    case prometheus::MetricType::Summary:
      return metric.summary.quantile.size() + 2;
    default:
      return 1;
  }
}

std::size_t cap_series(std::vector<prometheus::MetricFamily>& families, std::size_t max_series) {
  std::size_t kept = 0, dropped = 0;
  for (auto& fam : families) {
    std::size_t keep_metrics = 0;
    for (const auto& m : fam.metric) {
      std::size_t n = series_count(m, fam.type);
      if (dropped == 0 && kept + n <= max_series) {
        kept += n;
        ++keep_metrics;
      } else {
        dropped += n;
      }
    }
    fam.metric.resize(keep_metrics);
  }
  std::erase_if(families, [](const prometheus::MetricFamily& f) { return f.metric.empty(); });
  return dropped;
}

void guard_families(std::vector<prometheus::MetricFamily>& families, SeriesOrigins* origins,
                    const GuardOptions& options, GuardReport& report) {
  SeriesOrigins local;
  SeriesOrigins& o = origins ? *origins : local;
  o.resize(families.size());
  for (std::size_t i = 0; i < families.size(); ++i) {
    if (o[i].size() != families[i].metric.size()) {
      o[i].resize(families[i].metric.size(), origins ? std::uint16_t(0) : kForeignOrigin);
    }
  }
  Guard(families, o, options, report).run();
}

}  // namespace loadwatch
