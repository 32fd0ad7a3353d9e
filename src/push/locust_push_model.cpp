#include "push/locust_push_model.h"

#include <algorithm>

#include "push/push_families.h"
#include "sources/generator_families.h"

namespace loadwatch {

LocustPushModel::Outcome LocustPushModel::ingest(const LocustPush& push, double now) {
  Outcome out;
  std::vector<GeneratorSighting> tell;
  {
    std::lock_guard lock(mutex_);
    ++pushes_;
    auto it = sources_.find(push.source);
    if (it == sources_.end() && sources_.size() >= limits_.max_sources) {
      // Full: forget the source that pushed least recently if it has been quiet long enough
      // (CI runs that each push under a new name); else refuse the newcomer.
      auto oldest = std::min_element(sources_.begin(), sources_.end(), [](auto& a, auto& b) {
        return a.second.last_push < b.second.last_push;
      });
      if (oldest->second.last_push > now - limits_.evict_after_s) {
        out.refused = "max_sources";
        out.retry_after_s = std::max(1.0, oldest->second.last_push + limits_.evict_after_s - now);
        ++rejected_[out.refused];
        return out;
      }
      sources_.erase(oldest);
    }
    if (it != sources_.end() && push.time <= it->second.last.time) {
      // A late or repeated push must not move the figures or their age backwards.
      out.refused = "stale";
      ++rejected_[out.refused];
      return out;
    }
    if (it == sources_.end()) it = sources_.emplace(push.source, Source{}).first;
    Source& s = it->second;
    s.last = push;
    s.last_push = now;
    s.pending.emplace_back(push, now);
    if (s.pending.size() > kMaxPending) s.pending.pop_front();
    if (runs_) {
      const std::string origin = "locust:" + push.source;
      for (const auto& [at, users] : push.steps) {
        if (at <= s.last_step) continue;  // told already
        s.last_step = at;
        GeneratorSighting step;
        step.origin = origin;
        step.activity = users > 0 ? GeneratorActivity::Steady : GeneratorActivity::Idle;
        step.users = users;
        step.at = at;
        step.stale_after = 10;  // ten missed pushes: the Locust is gone
        tell.push_back(step);
      }
      GeneratorSighting alive;  // keeps the run open between steps
      alive.origin = origin;
      alive.activity = GeneratorActivity::Unknown;
      alive.at = push.time;
      alive.stale_after = 10;
      tell.push_back(alive);
    }
  }
  for (const auto& sighting : tell) runs_->generator_seen(sighting);
  return out;
}

void LocustPushModel::count_rejected(const char* reason) {
  std::lock_guard lock(mutex_);
  ++pushes_;
  ++rejected_[reason];
}

void LocustPushModel::collect(MetricSink& out, double now) {
  using F = GeneratorFamily;
  std::lock_guard lock(mutex_);
  for (auto& [name, s] : sources_) {
    // The pushes that arrived by `now`; of them the first whose next one is another step's,
    // else the newest.
    std::size_t ready = 0;
    while (ready < s.pending.size() && s.pending[ready].second <= now) ++ready;
    if (ready > 0) {
      std::size_t pick = ready - 1;
      for (std::size_t i = 0; i + 1 < ready; ++i) {
        if (s.pending[i].first.users != s.pending[i + 1].first.users) {
          pick = i;
          break;
        }
      }
      s.shown = std::move(s.pending[pick].first);
      s.pending.erase(s.pending.begin(), s.pending.begin() + static_cast<std::ptrdiff_t>(pick) + 1);
    }
    if (!s.shown) continue;  // its first push arrived while this sample was being taken
    const Labels src{{"source", name}};
    const LocustPush& shown = *s.shown;
    add_generator_sample(out, F::kRequests, src, shown.requests);
    add_generator_sample(out, F::kFailures, src, shown.failures);
    add_generator_sample(out, F::kUsers, src, shown.users);
    if (!shown.duration_counts.empty()) {
      add_generator_histogram(out, src, shown.duration_counts, shown.duration_sum);
    }
    add_generator_sample(out, F::kDataAge, src, now - shown.time);
    add_generator_sample(out, F::kDataAgeUncertainty, src, kTimeUncertainty);
    out.gauge("loadwatch_push_last_timestamp_seconds", kPushLastHelp,
              {{"protocol", "locust"}, {"source", name}}, s.last_push);
  }
  out.counter("loadwatch_push_lines_total", kPushLinesHelp, {{"protocol", "locust"}},
              static_cast<double>(pushes_));
  for (const auto& [reason, n] : rejected_) {
    out.counter("loadwatch_push_rejected_lines_total", kPushRejectedHelp,
                {{"protocol", "locust"}, {"reason", reason}}, static_cast<double>(n));
  }
}

}  // namespace loadwatch
