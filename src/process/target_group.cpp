#include "process/target_group.h"

#include <algorithm>

namespace loadwatch {

void ProcessCounters::merge_max(const ProcessCounters& o) {
  utime_ticks = std::max(utime_ticks, o.utime_ticks);
  stime_ticks = std::max(stime_ticks, o.stime_ticks);
  voluntary_ctxt_switches = std::max(voluntary_ctxt_switches, o.voluntary_ctxt_switches);
  nonvoluntary_ctxt_switches = std::max(nonvoluntary_ctxt_switches, o.nonvoluntary_ctxt_switches);
  minor_faults = std::max(minor_faults, o.minor_faults);
  major_faults = std::max(major_faults, o.major_faults);
  read_bytes = std::max(read_bytes, o.read_bytes);
  write_bytes = std::max(write_bytes, o.write_bytes);
}

ProcessCounters& ProcessCounters::operator+=(const ProcessCounters& o) {
  utime_ticks += o.utime_ticks;
  stime_ticks += o.stime_ticks;
  voluntary_ctxt_switches += o.voluntary_ctxt_switches;
  nonvoluntary_ctxt_switches += o.nonvoluntary_ctxt_switches;
  minor_faults += o.minor_faults;
  major_faults += o.major_faults;
  read_bytes += o.read_bytes;
  write_bytes += o.write_bytes;
  return *this;
}

ProcessCounters& ProcessCounters::operator-=(const ProcessCounters& o) {
  utime_ticks -= o.utime_ticks;
  stime_ticks -= o.stime_ticks;
  voluntary_ctxt_switches -= o.voluntary_ctxt_switches;
  nonvoluntary_ctxt_switches -= o.nonvoluntary_ctxt_switches;
  minor_faults -= o.minor_faults;
  major_faults -= o.major_faults;
  read_bytes -= o.read_bytes;
  write_bytes -= o.write_bytes;
  return *this;
}

void TargetGroup::update(const GroupSample& sample) {
  ++gen_;
  auto by_key = [](const Counted& a, const Counted& b) { return a.first < b.first; };
  auto find = [&by_key](const std::vector<Counted>& v, const ProcessKey& key) {
    auto it = std::lower_bound(v.begin(), v.end(), Counted{key, {}}, by_key);
    return it != v.end() && it->first == key ? &it->second : nullptr;
  };

  // This sample's live members, sorted; the same process listed twice counts once.
  next_.clear();
  next_.reserve(sample.live.size());
  for (const MemberSample& m : sample.live) next_.emplace_back(m.key, m.counters);
  if (!std::is_sorted(next_.begin(), next_.end(), by_key)) {  // mostly in PID order already
    std::sort(next_.begin(), next_.end(), by_key);
  }
  std::size_t w = 0;
  for (std::size_t i = 0; i < next_.size(); ++i) {
    if (w > 0 && next_[w - 1].first == next_[i].first) {
      next_[w - 1].second.merge_max(next_[i].second);
    } else {
      next_[w++] = next_[i];
    }
  }
  next_.resize(w);

  // A member that is back after leaving: take its share out of the retired base; its
  // current counters (at least as large) count from now on.
  bool key_in_common = false;
  auto old = live_.begin();
  for (auto& [key, c] : next_) {
    while (old != live_.end() && old->first < key) ++old;
    if (old != live_.end() && old->first == key) {
      c.merge_max(old->second);
      key_in_common = true;
    } else if (auto d = departed_.find(key); d != departed_.end()) {
      c.merge_max(d->second.counters);
      retired_ -= d->second.counters;
      departed_.erase(d);
    }
  }
  for (const MemberSample& m : sample.exited) {
    if (find(next_, m.key)) continue;
    ProcessCounters c = m.counters;
    if (const ProcessCounters* last = find(live_, m.key)) {
      c.merge_max(*last);
    } else if (auto d = departed_.find(m.key); d != departed_.end()) {
      // Still a zombie since an earlier sample: already retired.
      d->second.left_at = gen_;
      continue;
    }
    retired_ += c;
    departed_[m.key] = Departed{c, gen_};
  }
  // Members gone since the last sample (both lists are sorted).
  auto now = next_.begin();
  for (const auto& [key, c] : live_) {
    while (now != next_.end() && now->first < key) ++now;
    if ((now != next_.end() && now->first == key) || departed_.count(key)) continue;
    retired_ += c;
    departed_[key] = Departed{c, gen_};
  }
  // Forget departed members after a while: an exited process never comes back.
  for (auto it = departed_.begin(); it != departed_.end();) {
    if (gen_ - it->second.left_at > kDepartedKeepSamples) {
      it = departed_.erase(it);
    } else {
      ++it;
    }
  }

  const bool was_up = totals_.up;
  const bool up = !next_.empty();
  bool restarted = false;
  if (up && !was_up && ever_up_) restarted = true;       // back after being down
  if (up && was_up && !key_in_common) restarted = true;  // replaced within an interval
  if (restarted) ++totals_.restarts;

  GroupTotals& t = totals_;
  t.up = up;
  t.processes = next_.size();
  t.counters = retired_;
  t.rss_bytes = t.vsize_bytes = t.swap_bytes = t.open_fds = t.threads = 0;
  t.max_fds.reset();
  t.fd_usage_ratio.reset();
  t.oldest_starttime.reset();
  for (const MemberSample& m : sample.live) {
    t.rss_bytes += m.rss_bytes;
    t.vsize_bytes += m.vsize_bytes;
    t.swap_bytes += m.swap_bytes;
    t.open_fds += m.open_fds;
    t.threads += m.threads;
    if (m.fd_limit && *m.fd_limit > 0) {
      double ratio = static_cast<double>(m.open_fds) / static_cast<double>(*m.fd_limit);
      if (!t.fd_usage_ratio || ratio > *t.fd_usage_ratio) {
        t.fd_usage_ratio = ratio;
        t.max_fds = *m.fd_limit;
      }
    }
    if (!t.oldest_starttime || m.key.starttime < *t.oldest_starttime) {
      t.oldest_starttime = m.key.starttime;
    }
  }
  for (const auto& [key, c] : next_) t.counters += c;

  if (up && (!was_up || restarted)) {
    t.rss_peak_bytes = t.rss_bytes;  // a new run starts its own peak
  } else if (up) {
    t.rss_peak_bytes = std::max(t.rss_peak_bytes, t.rss_bytes);
  }
  if (up) ever_up_ = true;
  live_.swap(next_);
}

}  // namespace loadwatch
