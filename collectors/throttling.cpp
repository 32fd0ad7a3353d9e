// Each target member's binding cgroup (the one with the smallest quota on its path, as the CPU
// limit finds it) is looked up once and kept for kRefreshSamples samples; every sample then
// reads only one cpu.stat per distinct cgroup of the target, usually one file. The lookups
// take the /proc/PID/cgroup texts the targets collector's CPU limit read in the same sample
// (each member's every kRefreshSamples), so that each file is read once.
#include "collectors/throttling.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "procfs/cgroup_cpu_stat.h"
#include "procfs/cpu_limit.h"

namespace loadwatch {

namespace {

constexpr std::uint32_t kRefreshSamples = 15;  // cgroup moves are rare; quotas change rarely

class ThrottlingCollector final : public Collector {
 public:
  explicit ThrottlingCollector(const CollectorEnv& env) : sys_(env.sys) {}

  void reconfigure(const CollectorEnv& env) override {
    sys_ = env.sys;
    binding_.clear();
    by_cgroups_.clear();
  }

  void collect(SampleContext& ctx, MetricSink& out) override {
    ++gen_;
    if (gen_ - walked_gen_ >= kRefreshSamples) {  // quotas change rarely
      by_cgroups_.clear();
      walked_gen_ = gen_;
    }
    for (const TargetState& t : ctx.targets) {
      // The CPU limit re-read some members' cgroups this sample: bind them from its texts (the
      // quota walk again once per distinct text) instead of reading the files again.
      if (!t.cgroups.empty() && walked_gen_ != gen_) {
        by_cgroups_.clear();
        walked_gen_ = gen_;
      }
      std::set<std::string> dirs;
      auto text = t.cgroups.begin();  // in the order of t.pids
      for (const pid_t pid : t.pids) {
        // Updated in place: a copy of every member's binding each sample cost a node and a
        // string per member (500 members: ~2 % of a sample).
        auto [it, added] = binding_.try_emplace(pid);
        Binding& b = it->second;
        if (text != t.cgroups.end() && text->first == pid) {
          b.dir = text->second.empty() ? std::nullopt : bind(text->second);
          b.gen = gen_;
          ++text;
        } else if (added || gen_ - b.gen >= kRefreshSamples) {
          // A member the CPU limit did not refresh: its own file, re-read on the same cadence.
          b.dir = lookup(ctx.proc, pid);
          b.gen = gen_;
        }
        b.seen = gen_;
        if (b.dir) dirs.insert(*b.dir);
      }
      export_target(t.name, dirs, out);
    }
    std::erase_if(binding_, [&](const auto& kv) { return kv.second.seen != gen_; });  // gone
  }

 private:
  std::optional<std::string> lookup(const FsRoot& proc, pid_t pid) {
    if (proc.read(std::to_string(pid) + "/cgroup", text_) != 0) return std::nullopt;
    return bind(text_);
  }

  /// The binding cgroup dir of a /proc/PID/cgroup text. Members mostly share their cgroups:
  /// each set of them is walked once per refresh.
  std::optional<std::string> bind(const std::string& text) {
    auto it = by_cgroups_.find(text);
    if (it == by_cgroups_.end()) {
      auto q = cgroup_text_quota(text, sys_);
      it = by_cgroups_.emplace(text, q ? std::optional<std::string>(q->dir) : std::nullopt).first;
    }
    return it->second;
  }

  void export_target(const std::string& name, const std::set<std::string>& dirs, MetricSink& out) {
    std::optional<CgroupThrottling> sum;
    for (const std::string& dir : dirs) {
      if (sys_.read(dir + "/cpu.stat", text_) != 0) continue;  // the cgroup went away
      std::optional<CgroupThrottling> t;
      try {
        t = parse_cgroup_cpu_stat(text_);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(sys_.path(dir + "/cpu.stat") + ": " + e.what());
      }
      if (!t) continue;
      if (!sum) sum.emplace();
      sum->periods += t->periods;
      sum->throttled_periods += t->throttled_periods;
      sum->throttled_seconds += t->throttled_seconds;
    }
    if (!sum) return;  // no quota binds the target: nothing can throttle it
    const Labels labels{{"target", name}};
    out.counter("loadwatch_process_cpu_periods_total",
                "CPU quota enforcement periods in which the target's cgroup had runnable tasks "
                "(cgroup cpu.stat nr_periods).",
                labels, static_cast<double>(sum->periods));
    out.counter("loadwatch_process_cpu_throttled_periods_total",
                "Periods in which the target's cgroup used up its CPU quota and was held back "
                "(cgroup cpu.stat nr_throttled).",
                labels, static_cast<double>(sum->throttled_periods));
    out.counter("loadwatch_process_cpu_throttled_seconds_total",
                "Time the target cgroup's run queues were held back by its CPU quota, summed "
                "over CPUs (cgroup cpu.stat throttled_usec, v1 throttled_time).",
                labels, sum->throttled_seconds);
  }

  FsRoot sys_;
  struct Binding {
    std::optional<std::string> dir;  // the member's binding cgroup dir
    std::uint32_t gen = 0;           // sample it was looked up in
    std::uint32_t seen = 0;          // the last sample it was a member in
  };
  std::uint32_t gen_ = 0;
  std::uint32_t walked_gen_ = 0;  // sample by_cgroups_ was last emptied in
  std::unordered_map<pid_t, Binding> binding_;
  // /proc/PID/cgroup text -> its binding cgroup dir, for this refresh
  std::map<std::string, std::optional<std::string>, std::less<>> by_cgroups_;
  std::string text_;
};

}  // namespace

std::unique_ptr<Collector> make_throttling_collector(const CollectorEnv& env) {
  return std::make_unique<ThrottlingCollector>(env);
}

}  // namespace loadwatch
