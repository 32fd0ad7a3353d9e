// The targets collector: resolve each target's processes, read them once per sample
// (process_registry.h: kept fds, pread), account each group (target_group.h), export.
#include "collectors/targets.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "process/cgroup_membership.h"
#include "process/process_registry.h"
#include "process/process_tree.h"
#include "process/run_clock.h"
#include "process/target_group.h"
#include "process/target_resolver.h"
#include "procfs/cpu_limit.h"
#include "util/log.h"

namespace loadwatch {

namespace {

// The kept per-process fds (up to 7 per member) need more than the common soft limit of 1024
// when targets are large: raise the soft RLIMIT_NOFILE to the hard one, as the Go runtime
// does for every program (since Go 1.19). Capped: nothing here needs more.
void raise_nofile_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  const rlim_t want = std::min<rlim_t>(rl.rlim_max, 1 << 20);
  if (rl.rlim_cur >= want) return;
  const rlim_t old = rl.rlim_cur;
  rl.rlim_cur = want;
  if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) {
    spdlog::debug("targets: raised RLIMIT_NOFILE soft limit from {} to {}", old, want);
  }
}

struct Target {
  TargetConfig config;
  std::string selector_text;
  std::unique_ptr<TargetResolver> resolver;
  TargetGroup group;
  DescendantCache descendants;
  std::uint64_t partial_reads = 0;
  // The cores the group may use (affinity, cgroup quota): the largest of its live members'
  // limits, each re-read every kCpuLimitSamples samples (a few files, and limits change
  // rarely), at once for a new member (a restarted target may run under another quota).
  std::optional<double> cpu_limit;
  // The highest nice value over the live members (the least favoured): niced work elsewhere
  // on the host yields CPU to the group only while the group itself does not run niced.
  std::optional<std::int64_t> nice;
};

constexpr std::uint32_t kCpuLimitSamples = 15;

class TargetsCollector final : public Collector {
 public:
  explicit TargetsCollector(const CollectorEnv& env) : sys_(env.sys) {
    raise_nofile_limit();
    registry_ = std::make_unique<ProcessRegistry>(env.proc);
    membership_ = std::make_unique<CgroupMembership>(env.proc, env.sys);
    for (const TargetConfig& tc : env.config.targets) targets_.push_back(make_target(tc));
  }

  void reconfigure(const CollectorEnv& env) override {
    std::vector<std::unique_ptr<Target>> next;
    for (const TargetConfig& tc : env.config.targets) {
      auto same = std::find_if(targets_.begin(), targets_.end(),
                               [&](const auto& t) { return t && t->config == tc; });
      if (same != targets_.end()) {
        next.push_back(std::move(*same));  // unchanged: keeps counters and restarts
      } else {
        next.push_back(make_target(tc));
      }
    }
    targets_ = std::move(next);
    const bool roots_moved =
        env.proc.root() != registry_->proc().root() || env.sys.root() != sys_.root();
    sys_ = env.sys;
    if (env.proc.root() != registry_->proc().root()) {
      registry_ = std::make_unique<ProcessRegistry>(env.proc);
    }
    if (roots_moved) membership_ = std::make_unique<CgroupMembership>(env.proc, env.sys);
  }

  void collect(SampleContext& ctx, MetricSink& out) override {
    ProcessRegistry& reg = *registry_;
    reg.begin_sample();
    RunClock& clock = RunClock::shared();
    clock.tick();
    const bool scan = std::any_of(targets_.begin(), targets_.end(),
                                  [](const auto& t) { return t->resolver->scans_processes(); });
    if (scan) reg.refresh_listing(true);

    for (auto& tp : targets_) {
      Target& t = *tp;
      ResolveContext rctx{reg, sys_};
      members_.clear();
      t.resolver->resolve(rctx, members_);
      if (t.config.children) {
        add_descendants(reg, members_, &t.descendants);
      } else {
        if (!std::is_sorted(members_.begin(), members_.end())) {  // a listing's: in PID order
          std::sort(members_.begin(), members_.end());
        }
        members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
      }
      t.partial_reads += rctx.denied;

      GroupSample& sample = sample_;  // kept: its vectors keep their room across samples
      sample.live.clear();
      sample.exited.clear();
      t.nice.reset();
      TargetState state{t.config.name, t.selector_text, false, {}, {}, {}, {}, {}};
      state.pids.reserve(members_.size());  // one allocation each, not a doubling chain
      state.fd_counts.reserve(members_.size());
      state.quiet.reserve(members_.size());
      live_records_.clear();
      for (pid_t pid : members_) {
        ProcessRecord* rec = reg.member(pid);
        if (!rec) continue;  // gone since it was resolved: a normal race
        if (rec->partial) {
          ++t.partial_reads;
          if (!rec->partial_logged) {
            rec->partial_logged = true;
            spdlog::debug("target {}: permission denied reading parts of process {} ({})",
                          t.config.name, pid, rec->stat.comm);
          }
        }
        MemberSample m = member_sample(*rec);
        if (rec->stat.exited()) {
          sample.exited.push_back(m);
        } else {
          sample.live.push_back(m);
          t.nice = std::max(t.nice.value_or(rec->stat.nice), rec->stat.nice);
          state.pids.push_back(pid);
          live_records_.push_back(rec);
          state.fd_counts.push_back(rec->open_fds ? static_cast<long long>(*rec->open_fds) : -1);
          if (rec->quiet_gen == reg.generation()) {
            state.quiet.push_back(pid);
          } else {
            clock.ran(pid);  // the socket owners' walks may be samples apart
          }
        }
      }
      t.group.update(sample);
      refresh_cpu_limit(t, state);
      state.up = t.group.totals().up;
      export_target(t, out);
      ctx.targets.push_back(std::move(state));
    }
    reg.end_sample();
  }

 private:
  std::unique_ptr<Target> make_target(const TargetConfig& tc) {
    auto t = std::make_unique<Target>();
    t->config = tc;
    t->selector_text = tc.match.text();
    t->resolver = make_target_resolver(tc.match);
    return t;
  }

  /// The largest limit over the live members: the group is only saturated when none of them
  /// has room left. Each member's limit is refreshed every kCpuLimitSamples samples, at once
  /// when new, and spread by cgroup: members sharing a cgroup text are refreshed in the same
  /// sample, so that one listing of the cgroup confirms them all and its quota is read once.
  /// The cgroup texts refreshed go to `state` for the throttling collector, which then need
  /// not read them again.
  void refresh_cpu_limit(Target& t, TargetState& state) {
    const std::uint32_t gen = registry_->generation();
    if (gen != limit_gen_) {  // quotas are read afresh in each sample that needs them
      limit_gen_ = gen;
      quota_cache_.clear();
      membership_->begin_sample();
    }
    due_.clear();
    for (std::size_t i = 0; i < live_records_.size(); ++i) {
      const ProcessRecord& rec = *live_records_[i];
      if (rec.cpu_limit_gen == gen || rec.cpu_limit_gen == 0 || !rec.cpu_limit ||
          gen - rec.cpu_limit_gen >= kCpuLimitSamples ||
          (gen + rec.cpu_limit_phase) % kCpuLimitSamples == 0) {
        due_.push_back(i);
      }
    }
    // How many due members share each text a listing can confirm: a long listing is read
    // only when enough of them ask.
    shares_.clear();
    for (std::size_t i : due_) {
      const ProcessRecord& rec = *live_records_[i];
      if (rec.cpu_limit_gen == gen || !rec.cgroup_checkable) continue;
      auto it = std::find_if(shares_.begin(), shares_.end(),
                             [&](const auto& s) { return s.first == rec.cgroup_text.get(); });
      if (it == shares_.end()) {
        shares_.emplace_back(rec.cgroup_text.get(), 1);
      } else {
        ++it->second;
      }
    }
    state.cgroups.clear();
    for (std::size_t i : due_) {
      ProcessRecord& rec = *live_records_[i];
      if (rec.cpu_limit_gen != gen) refresh_member_limit(rec, gen);
      state.cgroups.emplace_back(rec.pid(), rec.cgroup_text ? *rec.cgroup_text : std::string());
    }
    t.cpu_limit.reset();
    for (const ProcessRecord* rec : live_records_) {
      if (rec->cpu_limit) t.cpu_limit = std::max(t.cpu_limit.value_or(0), *rec->cpu_limit);
    }
  }

  void refresh_member_limit(ProcessRecord& rec, std::uint32_t gen) {
    std::size_t sharing = 0;
    for (const auto& [text, n] : shares_) {
      if (text == rec.cgroup_text.get()) sharing = n;
    }
    // Still listed in its cgroups: the text stands. Otherwise (moved, a listing not read or
    // not worth reading, a text no listing can confirm) the member's own file, through its
    // kept fd, into a kept buffer (a read reserves 4 KiB).
    const bool confirmed = rec.cgroup_text && rec.cgroup_checkable &&
                           membership_->listed(*rec.cgroup_text, rec.pid(), sharing);
    if (!confirmed) {
      const bool read = rec.handle.read(ProcessHandle::kCgroup, cgroup_buf_) == ReadResult::Ok;
      rec.cgroup_text = read ? intern(cgroup_buf_) : nullptr;
      rec.cgroup_checkable = read && membership_->checkable(cgroup_buf_);
      const std::size_t phase =
          read ? std::hash<std::string>{}(cgroup_buf_) : static_cast<std::size_t>(rec.pid());
      rec.cpu_limit_phase = static_cast<std::uint32_t>(phase % kCpuLimitSamples);
    }
    rec.cpu_limit = process_cpu_limit_of_text(registry_->proc(), sys_, rec.pid(),
                                              rec.cgroup_text.get(), &quota_cache_);
    rec.cpu_limit_gen = gen;
  }

  /// One copy of each cgroup text, shared by the members that have it (they mostly share
  /// one); texts no member holds any more are dropped now and then.
  std::shared_ptr<const std::string> intern(const std::string& text) {
    auto it = texts_.find(text);
    if (it != texts_.end()) {
      if (auto kept = it->second.lock()) return kept;
    }
    if (texts_.size() > kMaxTextsBeforePrune) {
      std::erase_if(texts_, [](const auto& kv) { return kv.second.expired(); });
    }
    auto shared = std::make_shared<const std::string>(text);
    texts_.insert_or_assign(text, shared);
    return shared;
  }

  MemberSample member_sample(const ProcessRecord& rec) const {
    MemberSample m;
    m.key = ProcessKey{rec.pid(), rec.stat.starttime};
    ProcessCounters& c = m.counters;
    c.utime_ticks = rec.stat.utime;
    c.stime_ticks = rec.stat.stime;
    c.minor_faults = rec.stat.minflt;
    c.major_faults = rec.stat.majflt;
    c.voluntary_ctxt_switches = rec.status.voluntary_ctxt_switches;
    c.nonvoluntary_ctxt_switches = rec.status.nonvoluntary_ctxt_switches;
    if (rec.io) {
      c.read_bytes = rec.io->read_bytes;
      c.write_bytes = rec.io->write_bytes;
    }
    // VmRSS of status, not rss of stat: since the RSS counters became per-CPU (Linux 6.2),
    // stat reads them approximately (get_mm_counter) while status sums them precisely; the
    // captured fixture differs by 27 pages. stat's value only when status has none.
    m.rss_bytes = rec.status.vm_rss_bytes.value_or(
        static_cast<std::uint64_t>(std::max<std::int64_t>(rec.stat.rss, 0)) *
        static_cast<std::uint64_t>(registry_->page_size()));
    m.vsize_bytes = rec.stat.vsize;
    m.swap_bytes = rec.status.vm_swap_bytes.value_or(0);
    m.open_fds = rec.open_fds.value_or(0);
    if (rec.fd_limit && rec.fd_limit->soft != OpenFilesLimit::kUnlimited) {
      m.fd_limit = rec.fd_limit->soft;
    }
    m.threads = static_cast<std::uint64_t>(std::max<std::int64_t>(rec.stat.num_threads, 0));
    return m;
  }

  void export_target(const Target& t, MetricSink& out) const {
    const GroupTotals& g = t.group.totals();
    const double tck = static_cast<double>(registry_->clock_ticks());
    auto labels = [&t]() { return Labels{{"target", t.config.name}}; };
    auto with = [&t](const char* k, const char* v) {
      return Labels{{"target", t.config.name}, {k, v}};
    };
    auto d = [](std::uint64_t v) { return static_cast<double>(v); };

    out.gauge("loadwatch_target_up", "1 while at least one process matches the target.", labels(),
              g.up ? 1 : 0);
    out.gauge("loadwatch_target_processes", "Processes in the target's group.", labels(),
              d(g.processes));
    out.counter("loadwatch_target_restarts_total",
                "Times the target came back after being down, or had every process replaced "
                "between two samples.",
                labels(), d(g.restarts));
    out.counter("loadwatch_target_partial_reads_total",
                "Per-process reads of the target that were denied (EACCES): another user's "
                "process without the capability.",
                labels(), d(t.partial_reads));

    const char* cpu_help = "CPU time of the group, seconds (exited members included).";
    out.counter("loadwatch_process_cpu_seconds_total", cpu_help, with("mode", "user"),
                d(g.counters.utime_ticks) / tck);
    out.counter("loadwatch_process_cpu_seconds_total", cpu_help, with("mode", "system"),
                d(g.counters.stime_ticks) / tck);
    // The gauges describe live processes: while the target is down they are absent, not 0,
    // so that deriv() and predict_linear() over a window never mix a restart's zeros into a
    // trend. The counters keep counting across restarts.
    if (g.up) {
      out.gauge("loadwatch_process_resident_memory_bytes", "Sum of the group's resident set sizes.",
                labels(), d(g.rss_bytes));
      out.gauge("loadwatch_process_resident_memory_peak_bytes",
                "Highest sampled resident memory sum since the target (re)started.", labels(),
                d(g.rss_peak_bytes));
      out.gauge("loadwatch_process_virtual_memory_bytes",
                "Sum of the group's virtual memory sizes.", labels(), d(g.vsize_bytes));
      out.gauge("loadwatch_process_swap_bytes", "Sum of the group's swapped-out memory (VmSwap).",
                labels(), d(g.swap_bytes));
      out.gauge("loadwatch_process_open_fds", "Sum of the group's open file descriptors.", labels(),
                d(g.open_fds));
      if (g.max_fds) {
        out.gauge("loadwatch_process_max_fds",
                  "Soft RLIMIT_NOFILE of the member closest to its limit.", labels(),
                  d(*g.max_fds));
      }
      if (g.fd_usage_ratio) {
        out.gauge("loadwatch_process_fd_usage_ratio",
                  "Highest ratio of open fds to the soft fd limit over the group's members.",
                  labels(), *g.fd_usage_ratio);
      }
      out.gauge("loadwatch_process_threads", "Threads of the group.", labels(), d(g.threads));
      if (t.cpu_limit) {
        out.gauge("loadwatch_process_cpu_limit_cores",
                  "Cores the group may use: the largest over its members of the smaller of "
                  "the CPU affinity and the cgroup CPU quota.",
                  labels(), *t.cpu_limit);
      }
      if (t.nice) {
        out.gauge("loadwatch_process_nice",
                  "The highest nice value over the group's members (19: the lowest priority).",
                  labels(), static_cast<double>(*t.nice));
      }
    }
    const char* ctx_help = "Context switches of the group (exited members included).";
    out.counter("loadwatch_process_context_switches_total", ctx_help,
                with("ctxswitchtype", "voluntary"), d(g.counters.voluntary_ctxt_switches));
    out.counter("loadwatch_process_context_switches_total", ctx_help,
                with("ctxswitchtype", "nonvoluntary"), d(g.counters.nonvoluntary_ctxt_switches));
    out.counter("loadwatch_process_major_page_faults_total",
                "Major page faults of the group (exited members included).", labels(),
                d(g.counters.major_faults));
    out.counter("loadwatch_process_minor_page_faults_total",
                "Minor page faults of the group (exited members included).", labels(),
                d(g.counters.minor_faults));
    out.counter("loadwatch_process_read_bytes_total",
                "Bytes the group caused to be read from storage (/proc/PID/io read_bytes).",
                labels(), d(g.counters.read_bytes));
    out.counter("loadwatch_process_write_bytes_total",
                "Bytes the group caused to be written to storage (/proc/PID/io write_bytes).",
                labels(), d(g.counters.write_bytes));
    if (g.up && g.oldest_starttime) {
      if (auto start = registry_->start_time_seconds(*g.oldest_starttime)) {
        out.gauge("loadwatch_process_start_time_seconds",
                  "Start time of the group's oldest live member, seconds since the epoch; "
                  "changes when the target restarts.",
                  labels(), *start);
      }
    }
  }

  FsRoot sys_;
  std::unique_ptr<ProcessRegistry> registry_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::vector<pid_t> members_;
  GroupSample sample_;                        // this target's, in collect()
  std::vector<ProcessRecord*> live_records_;  // this sample's, parallel to TargetState::pids
  std::string cgroup_buf_;
  CgroupQuotaCache quota_cache_;  // this sample's
  std::uint32_t limit_gen_ = 0;   // sample quota_cache_ is for
  std::unique_ptr<CgroupMembership> membership_;
  static constexpr std::size_t kMaxTextsBeforePrune = 256;
  std::map<std::string, std::weak_ptr<const std::string>, std::less<>> texts_;
  std::vector<std::size_t> due_;  // refresh_cpu_limit's, indices into live_records_
  std::vector<std::pair<const std::string*, std::size_t>> shares_;
};

}  // namespace

std::unique_ptr<Collector> make_targets_collector(const CollectorEnv& env) {
  return std::make_unique<TargetsCollector>(env);
}

}  // namespace loadwatch
