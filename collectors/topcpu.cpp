#include "collectors/topcpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "collectors/host_file.h"
#include "process/process_handle.h"
#include "procfs/proc_pid_schedstat.h"
#include "procfs/proc_pid_stat.h"
#include "procfs/stat.h"

namespace loadwatch {

namespace {

class TopCpuCollector final : public Collector {
 public:
  TopCpuCollector() {
    if (long t = ::sysconf(_SC_CLK_TCK); t > 0) clk_tck_ = static_cast<double>(t);
  }
  ~TopCpuCollector() override {
    handles_.clear();  // before the root fd they are relative to
    if (root_fd_ >= 0) ::close(root_fd_);
  }
  TopCpuCollector(const TopCpuCollector&) = delete;
  TopCpuCollector& operator=(const TopCpuCollector&) = delete;

  void collect(SampleContext& ctx, MetricSink& out) override {
    // Periods on the monotonic clock: a step of the wall clock would move the cores figure.
    if (last_ == 0 || ctx.monotonic - last_ >= kTopCpuScanSeconds) {
      if (host_busy(ctx)) {
        scan(ctx);
      } else {
        idle(ctx.monotonic);
      }
    }
    for (const auto& [cores, name] : busiest_) {
      out.gauge("loadwatch_top_cpu_cores",
                "CPU in cores of all processes with this name (comm), for the busiest names on "
                "the host, whoever runs them; over the last scan's interval (5 s).",
                {{"comm", name}}, cores);
    }
  }

 private:
  struct Seen {
    std::uint64_t start = 0;  // starttime: a reused pid is another process
    std::uint64_t ticks = 0;  // utime + stime
    bool single = false;      // one thread at the last stat read
    // The schedstat read just before that stat, when the process had one thread already: while
    // it stays the same, the process did not run, so it neither used CPU nor started a thread.
    std::optional<PidSchedstat> sched;
  };

  /// Whether the host's CPU was at least kTopCpuHostBusy busy since the last call. True on
  /// the first call (a scan then sets the base) and when /proc/stat cannot be read: better a
  /// scan too many than a saturated host whose users go unnamed.
  bool host_busy(SampleContext& ctx) {
    std::string text;
    std::uint64_t busy = 0, total = 0;
    try {
      if (stat_file_.read(ctx.proc, text) != 0) return true;
      for (const auto& cpu : parse_stat(text).cpus) {
        for (std::size_t i = 0; i < cpu.modes; ++i) {
          total += cpu.ticks[i];
          if (i != 3 && i != 4) busy += cpu.ticks[i];  // not idle, not iowait
        }
      }
    } catch (const std::exception&) {
      return true;
    }
    bool first = stat_total_ == 0;
    std::uint64_t d_busy = busy - stat_busy_, d_total = total - stat_total_;
    bool went_back = busy < stat_busy_ || total < stat_total_;  // CPUs went offline
    stat_busy_ = busy;
    stat_total_ = total;
    if (first || went_back || d_total == 0) return true;
    return static_cast<double>(d_busy) >= kTopCpuHostBusy * static_cast<double>(d_total);
  }

  /// An idle period: nothing to name, and the next scan only sets the base. The kept fds and
  /// the figures last read stay for kTopCpuIdlePeriodsKept periods in a row: a process that
  /// did not run since has the same ticks, so the base scan reads its schedstat alone.
  void idle(double now) {
    busiest_.clear();
    base_only_ = true;
    last_ = now;
    if (++idle_periods_ >= kTopCpuIdlePeriodsKept) {
      seen_.clear();
      handles_.clear();
    }
  }

  /// The procfs root as an O_PATH fd for the kept handles; reopened if the root changes.
  bool open_root(const FsRoot& proc) {
    if (root_fd_ >= 0 && root_ == proc.root()) return true;
    handles_.clear();
    if (root_fd_ >= 0) ::close(root_fd_);
    root_ = proc.root();
    root_fd_ = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    return root_fd_ >= 0;
  }

  // Each process's stat is read through a kept fd (pread: ~3.9 us against ~8.2 us for
  // open, read and close here), taken from the daemon's fd budget; past the budget the
  // handle reads by path. A kept fd fails once its process exits, so a reused PID is read
  // through a new handle, never mixed with the old process. A one-thread process found quiet
  // keeps its schedstat fd alone (one fd, not two): its stat is opened again once it runs,
  // and kept while it runs at each scan.
  void scan(SampleContext& ctx) {
    if (!open_root(ctx.proc)) throw std::runtime_error("topcpu: cannot open " + ctx.proc.root());
    std::unordered_map<pid_t, Seen> now;
    std::map<std::string, double> ticks_by_name;  // CPU ticks since the last scan
    int err = 0;
    DIR* dir = open_dir_at(root_fd_, ".", err);
    if (!dir) throw std::runtime_error("topcpu: cannot list " + ctx.proc.root());
    ++scan_gen_;
    while (const dirent* de = ::readdir(dir)) {
      pid_t pid = 0;
      if (!parse_pid_name(de->d_name, pid)) continue;
      auto& h = handles_[pid];
      h.gen = scan_gen_;
      bool kept = h.handle != nullptr;
      if (!kept) h.handle = std::make_unique<ProcessHandle>(root_fd_, pid, budget_);
      // A process with one thread whose schedstat did not move since its last stat did not
      // run: one small read instead of the stat and its parse. A kept handle's fds fail once
      // its process exits, so a kept handle still reads the process seen last scan.
      auto before = seen_.find(pid);
      std::optional<PidSchedstat> sched;
      if (kept && before != seen_.end() && before->second.single) {
        sched = read_schedstat(*h.handle);  // before the stat it may vouch for next scan
        if (sched && before->second.sched && *sched == *before->second.sched) {
          h.handle->close(ProcessHandle::kStat);  // quiet: the schedstat fd is enough
          now.emplace(pid, before->second);
          continue;
        }
        if (!sched) {  // its process exited (or the text is unreadable): start afresh
          h.handle = std::make_unique<ProcessHandle>(root_fd_, pid, budget_);
          kept = false;
        }
      }
      ReadResult r = h.handle->read(ProcessHandle::kStat, text_);
      if (r == ReadResult::Gone && kept) {  // the kept fd's process exited; the PID is reused
        h.handle = std::make_unique<ProcessHandle>(root_fd_, pid, budget_);
        r = h.handle->read(ProcessHandle::kStat, text_);
        sched.reset();  // the old process's
      }
      if (r != ReadResult::Ok) {
        h.handle.reset();  // gone since the listing (normal), or unreadable
        continue;
      }
      auto st = parse_pid_stat(text_);
      if (!st) continue;
      if (kept && sched && before->second.start != st->starttime) {
        // A stat opened anew by path, after the kept schedstat's process exited and its PID
        // was taken: that schedstat is the old process's.
        h.handle->close(ProcessHandle::kSchedstat);
        sched.reset();
      }
      const bool single = st->num_threads == 1;
      Seen s{st->starttime, st->utime + st->stime, single, single ? sched : std::nullopt};
      now.emplace(pid, s);
      // Only a process seen last sample with the same start time has a known increase.
      if (before == seen_.end() || before->second.start != s.start ||
          s.ticks < before->second.ticks) {
        continue;
      }
      ticks_by_name[st->comm] += static_cast<double>(s.ticks - before->second.ticks);
    }
    ::closedir(dir);
    for (auto it = handles_.begin(); it != handles_.end();) {
      it = it->second.gen == scan_gen_ && it->second.handle ? std::next(it) : handles_.erase(it);
    }
    seen_ = std::move(now);
    double dt = ctx.monotonic - last_;
    bool first = last_ == 0 || base_only_;
    last_ = ctx.monotonic;
    base_only_ = false;
    idle_periods_ = 0;
    busiest_.clear();
    if (first || !(dt > 0)) return;
    for (auto& [name, ticks] : ticks_by_name) {
      double cores = ticks / clk_tck_ / dt;
      if (cores >= kTopCpuMinCores) busiest_.emplace_back(cores, name);
    }
    std::sort(busiest_.begin(), busiest_.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    if (busiest_.size() > kTopCpuNames) busiest_.resize(kTopCpuNames);
  }

  static std::optional<PidSchedstat> read_schedstat(ProcessHandle& handle) {
    char text[128];
    std::size_t len = 0;
    if (handle.read_small(ProcessHandle::kSchedstat, text, sizeof text, len) != ReadResult::Ok) {
      return std::nullopt;
    }
    return parse_pid_schedstat(std::string_view(text, len));
  }

  struct Kept {
    std::unique_ptr<ProcessHandle> handle;
    std::uint32_t gen = 0;  // the last scan that listed the PID
  };

  std::unordered_map<pid_t, Seen> seen_;
  std::unordered_map<pid_t, Kept> handles_;
  std::string root_;
  int root_fd_ = -1;
  FdBudget* budget_ = &FdBudget::shared();
  std::uint32_t scan_gen_ = 0;
  std::string text_;
  std::vector<std::pair<double, std::string>> busiest_;  // the last scan's, busiest first
  double last_ = 0;         // monotonic seconds of the last scan (0: none yet)
  bool base_only_ = false;  // an idle period came since the last scan: this one sets the base
  int idle_periods_ = 0;    // idle periods in a row
  double clk_tck_ = 100;
  std::uint64_t stat_busy_ = 0, stat_total_ = 0;  // /proc/stat's ticks at the last check
  HostFile stat_file_{"stat"};
};

}  // namespace

std::unique_ptr<Collector> make_topcpu_collector(const CollectorEnv&) {
  return std::make_unique<TopCpuCollector>();
}

}  // namespace loadwatch
