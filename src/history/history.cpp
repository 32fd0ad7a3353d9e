#include "history/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string_view>

#include "metrics/exposition.h"

namespace loadwatch {

namespace {

constexpr float kGap = std::numeric_limits<float>::quiet_NaN();
// A counter point whose increase is unknown (first value, after a gap or a reset): its raw
// value is kept as an anchor instead.
constexpr float kNoIncrease = -1.0f;

struct KeptFamily {
  std::string_view name;
  std::string_view drop_label;
};

// The series a run report and the live page need: per target, host, per source.
constexpr KeptFamily kKept[] = {
    {"loadwatch_process_cpu_seconds_total", ""},
    {"loadwatch_process_resident_memory_bytes", ""},
    {"loadwatch_process_open_fds", ""},
    {"loadwatch_process_max_fds", ""},
    {"loadwatch_process_threads", ""},
    {"loadwatch_process_cpu_limit_cores", ""},
    {"loadwatch_process_nice", ""},
    {"loadwatch_target_processes", ""},
    {"loadwatch_process_cpu_throttled_seconds_total", ""},
    {"loadwatch_process_cpu_throttled_periods_total", ""},
    {"loadwatch_process_cpu_periods_total", ""},
    {"loadwatch_cpu_seconds_total", "cpu"},
    {"loadwatch_procs_running", ""},
    {"loadwatch_top_cpu_cores", ""},
    {"loadwatch_pressure_cpu_waiting_seconds_total", ""},
    {"loadwatch_pressure_memory_waiting_seconds_total", ""},
    {"loadwatch_pressure_memory_stalled_seconds_total", ""},
    {"loadwatch_pressure_io_waiting_seconds_total", ""},
    {"loadwatch_pressure_io_stalled_seconds_total", ""},
    {"loadwatch_swap_in_pages_total", ""},
    {"loadwatch_swap_out_pages_total", ""},
    {"loadwatch_tcp_connections", ""},
    {"loadwatch_tcp_listen_overflows_total", ""},
    {"loadwatch_tcp_listen_drops_total", ""},
    {"loadwatch_tcp_ephemeral_port_usage_ratio", ""},
    {"loadwatch_generator_requests_per_second", ""},
    {"loadwatch_generator_requests_total", ""},
    {"loadwatch_generator_failures_total", ""},
    {"loadwatch_generator_latency_seconds", ""},
    {"loadwatch_generator_current_latency_seconds", ""},
    {"loadwatch_generator_users", ""},
    {"loadwatch_generator_data_age_seconds", ""},
    {"loadwatch_generator_data_age_uncertainty_seconds", ""},
    {"loadwatch_generator_request_duration_seconds", ""},
    {"loadwatch_mock_requests_total", ""},
    {"loadwatch_mock_unmatched_requests_total", ""},
    {"loadwatch_clock_steps_total", ""},  // a rate window across a step is off by it
    {"loadwatch_sample_gap_seconds_total", ""},
};

/// The kept family named `name`, or null. The drop label (if any) is summed away, e.g. "cpu"
/// for host CPU, so the host's series count does not grow with its cores.
const KeptFamily* kept_family(std::string_view name) {
  for (const auto& k : kKept) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

/// What a series adds to its metric: a summary's quantile label, or a histogram's suffix
/// (_bucket, _count, _sum) and a bucket's le label, as Prometheus names them.
struct SeriesPart {
  std::string_view suffix;
  const char* label = nullptr;  // "quantile" or "le"
  double value = 0;
};

std::string part_value(const SeriesPart& part) {
  std::string v;
  append_number(v, part.value);  // +Inf as "+Inf", as in /metrics
  return v;
}

/// The labels a series of family `kept` keeps: all of the metric's but the drop label, then the
/// part's label (a quantile, a bucket's le).
std::map<std::string, std::string> series_labels(const KeptFamily& kept,
                                                 const prometheus::ClientMetric& m,
                                                 const SeriesPart& part) {
  std::map<std::string, std::string> labels;
  for (const auto& l : m.label) {
    if (kept.drop_label.empty() || l.name != kept.drop_label) labels.emplace(l.name, l.value);
  }
  if (part.label) labels.emplace(part.label, part_value(part));
  return labels;
}

/// Writes a series key into `key`: name{a="x",b="y"} with Prometheus escaping, or name alone.
void series_key(std::string& key, const KeptFamily& kept, const prometheus::ClientMetric& m,
                const SeriesPart& part) {
  key.assign(kept.name);
  key.append(part.suffix);
  bool first = true;
  for (const auto& l : m.label) {
    if (!kept.drop_label.empty() && l.name == kept.drop_label) continue;
    key += first ? '{' : ',';
    first = false;
    key += l.name;
    key += "=\"";
    append_escaped_label_value(key, l.value);
    key += '"';
  }
  if (part.label) {
    key += first ? '{' : ',';
    first = false;
    key += part.label;
    key += "=\"";
    append_number(key, part.value);
    key += '"';
  }
  if (!first) key += '}';
}

}  // namespace

History::History(HistorySettings settings) : settings_(settings) {
  settings_.points = std::max<std::size_t>(settings_.points, 2);
  time_.assign(settings_.points, 0.0);
}

void History::extract(const std::vector<prometheus::MetricFamily>& families) {
  known_.clear();
  fresh_.clear();
  for (const auto& f : families) {
    const KeptFamily* kept = kept_family(f.name);
    if (!kept) continue;
    const bool counter = f.type == prometheus::MetricType::Counter;
    const bool sums = !kept->drop_label.empty();
    // Where this family's values start: a summed series can only repeat within its family.
    const std::size_t known_start = known_.size(), fresh_start = fresh_.size();
    auto add = [&](const prometheus::ClientMetric& m, const SeriesPart& part, double v,
                   bool is_counter) {
      series_key(key_, *kept, m, part);
      // index_ changes only in record(), on this same thread: no lock needed to read it.
      if (auto it = index_.find(key_); it != index_.end()) {
        if (sums) {
          for (std::size_t i = known_start; i < known_.size(); ++i) {
            if (known_[i].series == it->second) {
              known_[i].value += v;
              return;
            }
          }
        }
        known_.push_back(Known{it->second, v});
        return;
      }
      if (sums) {
        for (std::size_t i = fresh_start; i < fresh_.size(); ++i) {
          if (fresh_[i].info.key == key_) {
            fresh_[i].value += v;
            return;
          }
        }
      }
      fresh_.push_back(Fresh{HistorySeriesInfo{key_, f.name + std::string(part.suffix),
                                               series_labels(*kept, m, part), is_counter},
                             v});
    };
    for (const auto& m : f.metric) {
      switch (f.type) {
        case prometheus::MetricType::Counter:
          add(m, {}, m.counter.value, counter);
          break;
        case prometheus::MetricType::Gauge:
          add(m, {}, m.gauge.value, counter);
          break;
        case prometheus::MetricType::Untyped:
          add(m, {}, m.untyped.value, counter);
          break;
        case prometheus::MetricType::Summary:
          for (const auto& q : m.summary.quantile) {
            add(m, {"", "quantile", q.quantile}, q.value, counter);
          }
          break;
        case prometheus::MetricType::Histogram: {
          // Kept as Prometheus stores one: _bucket{le}, _count and _sum, all counters, so a
          // phase's distribution is the difference of two points.
          const auto& h = m.histogram;
          for (const auto& b : h.bucket) {
            add(m, {"_bucket", "le", b.upper_bound}, double(b.cumulative_count), true);
          }
          if (h.bucket.empty() || std::isfinite(h.bucket.back().upper_bound)) {
            add(m, {"_bucket", "le", std::numeric_limits<double>::infinity()},
                double(h.sample_count), true);
          }
          add(m, {"_count"}, double(h.sample_count), true);
          add(m, {"_sum"}, h.sample_sum, true);
          break;
        }
        default:
          break;
      }
    }
  }
}

void History::put(Series& s, std::size_t idx, std::size_t point, double value) {
  if (!s.info.counter) {
    s.ring[idx] = static_cast<float>(value);
  } else {
    bool continuous = s.has_last && s.last_seen + 1 == point && value >= s.last_raw;
    if (continuous) {
      s.ring[idx] = static_cast<float>(value - s.last_raw);
    } else {
      s.ring[idx] = kNoIncrease;
      s.anchors.emplace_back(point, value);
    }
    s.last_raw = value;
    s.has_last = true;
  }
  s.last_seen = point;
}

void History::record(const std::vector<prometheus::MetricFamily>& families, double timestamp) {
  // Series keys are built and looked up outside the lock: readers go on meanwhile. Known series
  // cost one key and one lookup; only a new series builds its labels.
  extract(families);
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (!pending_.set) {
      // A reader holds the lock: the sampler does not wait, this point goes in with the next.
      pending_.set = true;
      pending_.timestamp = timestamp;
      std::swap(pending_.known, known_);
      std::swap(pending_.fresh, fresh_);
      return;
    }
    lock.lock();  // the second point in a row: wait rather than lose one
  }
  if (pending_.set) {
    pending_.set = false;
    ++deferred_;
    write(pending_.timestamp, pending_.known, pending_.fresh);
    // That point may have added or dropped series, which moves the indices in known_.
    extract(families);
  }
  write(timestamp, known_, fresh_);
}

void History::write(double timestamp, const std::vector<Known>& known, std::vector<Fresh>& fresh) {
  if (count_ > 0 && timestamp <= time_[(head_ + settings_.points - 1) % settings_.points]) return;
  const std::size_t idx = head_;
  const std::size_t point = written_;
  time_[idx] = timestamp;
  for (auto& s : series_) s.ring[idx] = kGap;
  for (const Known& v : known) put(series_[v.series], idx, point, v.value);
  for (Fresh& v : fresh) {
    if (auto it = index_.find(v.info.key); it != index_.end()) {  // a family given twice
      put(series_[it->second], idx, point, v.value);
      continue;
    }
    if (series_.size() >= settings_.max_series) {
      ++dropped_;
      continue;
    }
    index_.emplace(v.info.key, series_.size());
    Series s;
    s.info = std::move(v.info);
    s.ring.assign(settings_.points, kGap);
    s.oldest_raw = std::nan("");
    series_.push_back(std::move(s));
    put(series_.back(), idx, point, v.value);
  }
  head_ = (head_ + 1) % settings_.points;
  ++written_;
  count_ = std::min(count_ + 1, settings_.points);
  evict_stale();
}

namespace {
double anchor_at(const std::deque<std::pair<std::size_t, double>>& anchors, std::size_t point) {
  for (const auto& [p, v] : anchors) {
    if (p == point) return v;
  }
  return std::nan("");
}
}  // namespace

void History::evict_stale() {
  const std::size_t oldest = written_ - count_;
  const std::size_t n = settings_.points;
  for (auto& s : series_) {
    if (!s.info.counter) continue;
    if (oldest == s.last_seen && s.anchors.size() == 1 && s.anchors.front().first == oldest) {
      s.oldest_raw = s.anchors.front().second;  // first point of a new series
    } else if (count_ == n) {
      // The oldest point moved on by one: carry its raw value forward.
      float d = s.ring[oldest % n];
      if (std::isnan(d))
        s.oldest_raw = std::nan("");
      else if (d < 0)
        s.oldest_raw = anchor_at(s.anchors, oldest);
      else
        s.oldest_raw += d;
    }
    while (!s.anchors.empty() && s.anchors.front().first < oldest) s.anchors.pop_front();
  }
  auto stale = [oldest](const Series& s) { return s.last_seen < oldest; };
  if (std::any_of(series_.begin(), series_.end(), stale)) {
    series_.erase(std::remove_if(series_.begin(), series_.end(), stale), series_.end());
    index_.clear();
    for (std::size_t i = 0; i < series_.size(); ++i) index_.emplace(series_[i].info.key, i);
  }
}

bool History::matches(const Series& s, const HistorySelector& sel) const {
  if (sel.name.find('{') != std::string::npos) {
    if (s.info.key != sel.name) return false;
  } else if (s.info.family != sel.name) {
    return false;
  }
  for (const auto& [k, v] : sel.labels) {
    auto it = s.info.labels.find(k);
    if (it == s.info.labels.end() || it->second != v) return false;
  }
  return true;
}

namespace {
/// Copies ring[from .. from + len) (indices modulo ring.size()) to `out`: at most two memcpys.
template <typename T>
void copy_ring(const std::vector<T>& ring, std::size_t from, std::size_t len, T* out) {
  const std::size_t n = ring.size();
  from %= n;
  const std::size_t first_part = std::min(len, n - from);
  std::copy_n(ring.data() + from, first_part, out);
  std::copy_n(ring.data(), len - first_part, out + first_part);
}
}  // namespace

HistoryColumns History::query(const HistoryQuery& q) const {
  HistoryColumns out;
  // What a counter column needs once the lock is released.
  struct CounterState {
    double raw = 0;  // raw value at the point before the answer's first (or at the oldest)
    std::vector<std::pair<std::size_t, double>> anchors;  // those inside the answer
  };
  std::vector<CounterState> counters;
  std::size_t first = 0, begin = 0, end = 0;
  double time_before = std::nan("");  // timestamp of the point before the answer's first
  {
    // Under the shared lock only the choice of series and plain copies of their ring segments:
    // the sampler waits for a reader at most that long. Rates and raw counter values are
    // computed on the copies afterwards.
    std::shared_lock lock(mutex_);
    std::vector<const Series*> chosen;
    for (const auto& sel : q.select) {
      // An exact series is one lookup (index_ changes only under the exclusive lock), not a
      // walk over every series.
      if (sel.name.find('{') != std::string::npos) {
        auto it = index_.find(sel.name);
        if (it == index_.end()) continue;
        const Series& s = series_[it->second];
        if (!matches(s, sel) || std::find(chosen.begin(), chosen.end(), &s) != chosen.end()) {
          continue;
        }
        if (chosen.size() >= q.max_series) {
          out.truncated = true;
          continue;
        }
        chosen.push_back(&s);
        continue;
      }
      for (const auto& s : series_) {
        if (!matches(s, sel)) continue;
        if (std::find(chosen.begin(), chosen.end(), &s) != chosen.end()) continue;
        if (chosen.size() >= q.max_series) {
          out.truncated = true;
          break;
        }
        chosen.push_back(&s);
      }
    }
    const std::size_t n = settings_.points;
    first = written_ - count_;  // point number of the oldest point
    // Timestamps only grow: find the first point after `since` by binary search.
    std::size_t lo = 0, hi = count_;
    while (lo < hi) {
      std::size_t mid = (lo + hi) / 2;
      if (time_[(first + mid) % n] <= q.since)
        lo = mid + 1;
      else
        hi = mid;
    }
    begin = lo;
    hi = count_;
    while (lo < hi) {
      std::size_t mid = (lo + hi) / 2;
      if (time_[(first + mid) % n] <= q.until)
        lo = mid + 1;
      else
        hi = mid;
    }
    end = std::max(begin, lo);
    const std::size_t len = end - begin;
    out.time.resize(len);
    copy_ring(time_, first + begin, len, out.time.data());
    if (begin > 0) time_before = time_[(first + begin - 1) % n];
    out.series.reserve(chosen.size());
    out.values.resize(chosen.size());
    counters.resize(chosen.size());
    for (std::size_t c = 0; c < chosen.size(); ++c) {
      const Series& s = *chosen[c];
      out.series.push_back(s.info);
      out.values[c].resize(len);
      copy_ring(s.ring, first + begin, len, out.values[c].data());
      if (!s.info.counter || q.rate) continue;
      // Raw values: from the oldest point held, add the increases up to the answer's first.
      double raw = s.oldest_raw;
      for (std::size_t p = first + 1; p < first + begin; ++p) {
        float d = s.ring[p % n];
        if (std::isnan(d))
          raw = std::nan("");
        else if (d < 0)
          raw = anchor_at(s.anchors, p);
        else
          raw += d;
      }
      counters[c].raw = raw;
      for (const auto& a : s.anchors) {
        if (a.first >= first + begin && a.first < first + end) counters[c].anchors.push_back(a);
      }
    }
  }
  for (std::size_t c = 0; c < out.values.size(); ++c) {
    if (!out.series[c].counter) continue;
    std::vector<float>& col = out.values[c];
    if (q.rate) {
      // A point has a rate when it has an increase (not the oldest held, not after a gap or
      // a reset) and time moved on since the point before it.
      double prev_time = time_before;
      for (std::size_t i = 0; i < col.size(); ++i) {
        const float d = col[i];
        const double t = out.time[i];
        const bool known = begin + i > 0 && !std::isnan(d) && d >= 0;
        const double dt = known ? t - prev_time : 0;
        col[i] = known && dt > 0 ? static_cast<float>(d / dt) : kGap;
        prev_time = t;
      }
    } else {
      double raw = counters[c].raw;
      const std::size_t p0 = first + begin;
      for (std::size_t i = 0; i < col.size(); ++i) {
        const std::size_t p = p0 + i;
        if (p > first) {
          const float d = col[i];
          if (std::isnan(d)) {
            raw = std::nan("");
          } else if (d < 0) {
            raw = std::nan("");
            for (const auto& [ap, av] : counters[c].anchors) {
              if (ap == p) {
                raw = av;
                break;
              }
            }
          } else {
            raw += d;
          }
        }
        col[i] = static_cast<float>(raw);
      }
    }
  }
  return out;
}

std::vector<HistorySeriesInfo> History::list() const {
  std::shared_lock lock(mutex_);
  std::vector<HistorySeriesInfo> out;
  out.reserve(series_.size());
  for (const auto& s : series_) out.push_back(s.info);
  return out;
}

std::size_t History::size() const {
  std::shared_lock lock(mutex_);
  return count_;
}

std::size_t History::dropped_series() const {
  std::shared_lock lock(mutex_);
  return dropped_;
}

std::size_t History::deferred_points() const {
  std::shared_lock lock(mutex_);
  return deferred_;
}

std::size_t History::column_bytes() const {
  std::shared_lock lock(mutex_);
  return time_.size() * sizeof(double) + series_.size() * settings_.points * sizeof(float);
}

}  // namespace loadwatch
