#include "history/history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

namespace loadwatch {

namespace {

constexpr float kGap = std::numeric_limits<float>::quiet_NaN();
// A counter point whose increase is unknown (first value, after a gap or a reset): its raw
// value is kept as an anchor instead.
constexpr float kNoIncrease = -1.0f;

struct KeptFamily {
  const char* name;
  const char* drop_label;
};

// The series a run report and the live page need: per target, host, per source.
constexpr KeptFamily kKept[] = {
    {"loadwatch_process_cpu_seconds_total", ""},
    {"loadwatch_process_resident_memory_bytes", ""},
    {"loadwatch_process_open_fds", ""},
    {"loadwatch_process_max_fds", ""},
    {"loadwatch_process_threads", ""},
    {"loadwatch_target_processes", ""},
    {"loadwatch_cpu_seconds_total", "cpu"},
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
    {"loadwatch_mock_requests_total", ""},
    {"loadwatch_mock_unmatched_requests_total", ""},
};

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_quantile(double q) {
  std::string s = std::to_string(q);  // "0.950000"
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

bool history_kept_family(const std::string& name, std::string* drop_label) {
  for (const auto& k : kKept) {
    if (name == k.name) {
      if (drop_label) *drop_label = k.drop_label;
      return true;
    }
  }
  return false;
}

std::string history_series_key(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& labels) {
  if (labels.empty()) return name;
  std::string key = name + "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) key += ",";
    key += labels[i].first + "=\"" + escape_label_value(labels[i].second) + "\"";
  }
  return key + "}";
}

History::History(HistorySettings settings) : settings_(settings) {
  settings_.points = std::max<std::size_t>(settings_.points, 2);
  time_.assign(settings_.points, 0.0);
}

std::vector<History::Value> History::extract(
    const std::vector<prometheus::MetricFamily>& families) const {
  std::vector<Value> out;
  std::unordered_map<std::string, std::size_t> summed;  // key -> index in out (aggregated)
  for (const auto& f : families) {
    std::string drop;
    if (!history_kept_family(f.name, &drop)) continue;
    bool counter = f.type == prometheus::MetricType::Counter;
    for (const auto& m : f.metric) {
      std::vector<std::pair<std::string, std::string>> labels;
      for (const auto& l : m.label) {
        if (l.name != drop || drop.empty()) labels.emplace_back(l.name, l.value);
      }
      auto add = [&](std::vector<std::pair<std::string, std::string>> ls, double v) {
        std::string key = history_series_key(f.name, ls);
        if (!drop.empty()) {
          auto [it, fresh] = summed.emplace(key, out.size());
          if (!fresh) {
            out[it->second].value += v;
            return;
          }
        }
        HistorySeriesInfo info{key, f.name, {ls.begin(), ls.end()}, counter};
        out.push_back(Value{std::move(key), std::move(info), v});
      };
      switch (f.type) {
        case prometheus::MetricType::Counter: add(labels, m.counter.value); break;
        case prometheus::MetricType::Gauge: add(labels, m.gauge.value); break;
        case prometheus::MetricType::Untyped: add(labels, m.untyped.value); break;
        case prometheus::MetricType::Summary:
          for (const auto& q : m.summary.quantile) {
            auto ls = labels;
            ls.emplace_back("quantile", format_quantile(q.quantile));
            add(std::move(ls), q.value);
          }
          break;
        default: break;  // histograms are not kept
      }
    }
  }
  return out;
}

void History::record(const std::vector<prometheus::MetricFamily>& families, double timestamp) {
  std::vector<Value> values = extract(families);  // outside the lock: readers go on meanwhile
  std::unique_lock lock(mutex_);
  if (count_ > 0 && timestamp <= time_[(head_ + settings_.points - 1) % settings_.points]) return;
  const std::size_t idx = head_;
  const std::size_t point = written_;
  time_[idx] = timestamp;
  for (auto& s : series_) s.ring[idx] = kGap;
  for (auto& v : values) {
    auto it = index_.find(v.key);
    if (it == index_.end()) {
      if (series_.size() >= settings_.max_series) {
        ++dropped_;
        continue;
      }
      it = index_.emplace(v.key, series_.size()).first;
      Series s;
      s.info = std::move(v.info);
      s.ring.assign(settings_.points, kGap);
      s.oldest_raw = std::nan("");
      series_.push_back(std::move(s));
    }
    Series& s = series_[it->second];
    if (!s.info.counter) {
      s.ring[idx] = static_cast<float>(v.value);
    } else {
      bool continuous = s.has_last && s.last_seen + 1 == point && v.value >= s.last_raw;
      if (continuous) {
        s.ring[idx] = static_cast<float>(v.value - s.last_raw);
      } else {
        s.ring[idx] = kNoIncrease;
        s.anchors.emplace_back(point, v.value);
      }
      s.last_raw = v.value;
      s.has_last = true;
    }
    s.last_seen = point;
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
      if (std::isnan(d)) s.oldest_raw = std::nan("");
      else if (d < 0) s.oldest_raw = anchor_at(s.anchors, oldest);
      else s.oldest_raw += d;
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

HistoryColumns History::query(const HistoryQuery& q) const {
  HistoryColumns out;
  std::shared_lock lock(mutex_);
  std::vector<const Series*> chosen;
  for (const auto& sel : q.select) {
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
  const std::size_t first = written_ - count_;  // point number of the oldest point
  // Timestamps only grow: find the first point after `since` by binary search.
  std::size_t lo = 0, hi = count_;
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    if (time_[(first + mid) % n] <= q.since) lo = mid + 1;
    else hi = mid;
  }
  std::size_t begin = lo, end = lo;
  while (end < count_ && time_[(first + end) % n] <= q.until) ++end;
  out.time.reserve(end - begin);
  for (std::size_t i = begin; i < end; ++i) out.time.push_back(time_[(first + i) % n]);
  out.series.reserve(chosen.size());
  out.values.reserve(chosen.size());
  for (const Series* s : chosen) {
    out.series.push_back(s->info);
    std::vector<float> col;
    col.reserve(end - begin);
    if (!s->info.counter) {
      for (std::size_t i = begin; i < end; ++i) col.push_back(s->ring[(first + i) % n]);
    } else if (q.rate) {
      for (std::size_t i = begin; i < end; ++i) {
        float d = s->ring[(first + i) % n];
        bool known = i > 0 && !std::isnan(d) && d >= 0;
        double dt = known ? time_[(first + i) % n] - time_[(first + i - 1) % n] : 0;
        col.push_back(known && dt > 0 ? static_cast<float>(d / dt) : kGap);
      }
    } else {
      // Raw values: from the oldest point held, add the increases forward.
      double raw = s->oldest_raw;
      for (std::size_t p = first; p < first + end; ++p) {
        if (p > first) {
          float d = s->ring[p % n];
          if (std::isnan(d)) raw = std::nan("");
          else if (d < 0) raw = anchor_at(s->anchors, p);
          else raw += d;
        }
        if (p >= first + begin) col.push_back(static_cast<float>(raw));
      }
    }
    out.values.push_back(std::move(col));
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

std::size_t History::column_bytes() const {
  std::shared_lock lock(mutex_);
  return time_.size() * sizeof(double) + series_.size() * settings_.points * sizeof(float);
}

}  // namespace loadwatch
