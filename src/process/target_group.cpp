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
  std::map<ProcessKey, ProcessCounters> live;
  bool key_in_common = false;

  // A member that is back after leaving: take its share out of the retired base; its
  // current counters (at least as large) count from now on.
  auto take_back = [this](const ProcessKey& key, ProcessCounters& c) {
    auto d = departed_.find(key);
    if (d == departed_.end()) return;
    c.merge_max(d->second.counters);
    retired_ -= d->second.counters;
    departed_.erase(d);
  };

  for (const MemberSample& m : sample.live) {
    ProcessCounters c = m.counters;
    if (auto it = live_.find(m.key); it != live_.end()) {
      c.merge_max(it->second);
      key_in_common = true;
    } else {
      take_back(m.key, c);
    }
    auto [slot, inserted] = live.emplace(m.key, c);
    if (!inserted) slot->second.merge_max(c);  // the same process listed twice
  }
  for (const MemberSample& m : sample.exited) {
    if (live.count(m.key)) continue;
    ProcessCounters c = m.counters;
    if (auto it = live_.find(m.key); it != live_.end()) {
      c.merge_max(it->second);
    } else if (auto d = departed_.find(m.key); d != departed_.end()) {
      // Still a zombie since an earlier sample: already retired.
      d->second.left_at = gen_;
      continue;
    }
    retired_ += c;
    departed_[m.key] = Departed{c, gen_};
  }
  for (const auto& [key, c] : live_) {
    if (live.count(key) || departed_.count(key)) continue;
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
  const bool up = !live.empty();
  bool restarted = false;
  if (up && !was_up && ever_up_) restarted = true;       // back after being down
  if (up && was_up && !key_in_common) restarted = true;  // replaced within an interval
  if (restarted) ++totals_.restarts;

  GroupTotals& t = totals_;
  t.up = up;
  t.processes = live.size();
  t.counters = retired_;
  t.rss_bytes = t.vsize_bytes = t.swap_bytes = t.open_fds = t.threads = 0;
  t.max_fds.reset();
  t.fd_usage_ratio.reset();
  t.oldest_starttime.reset();
  for (const MemberSample& m : sample.live) {
    if (!live.count(m.key)) continue;
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
  for (const auto& [key, c] : live) t.counters += c;

  if (up && (!was_up || restarted)) {
    t.rss_peak_bytes = t.rss_bytes;  // a new run starts its own peak
  } else if (up) {
    t.rss_peak_bytes = std::max(t.rss_peak_bytes, t.rss_bytes);
  }
  if (up) ever_up_ = true;
  live_ = std::move(live);
}

}  // namespace loadwatch
