#pragma once
// The processes the targets collector knows about this sample: one record per live PID,
// with its kept handles and its parsed /proc files, shared by all targets.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "process/process_handle.h"
#include "procfs/fs_root.h"
#include "procfs/proc_pid_io.h"
#include "procfs/proc_pid_limits.h"
#include "procfs/proc_pid_schedstat.h"
#include "procfs/proc_pid_stat.h"
#include "procfs/proc_pid_statm.h"
#include "procfs/proc_pid_status.h"

namespace loadwatch {

/// A /proc/PID/schedstat text as last read, compared byte for byte with the next read: the
/// kernel prints the same numbers the same way, so a process that did not run reads the same
/// text, with no parse. A text longer than fits is kept parsed (and the next read parsed).
struct KeptSchedstat {
  static constexpr std::uint8_t kNone = 0;
  static constexpr std::uint8_t kParsed = 0xff;
  char bytes[31] = {};
  std::uint8_t len = kNone;  // 1..31: a text of that length; kParsed: a PidSchedstat in bytes

  bool has_value() const { return len != kNone; }
  /// Keeps `text` when it parses (parse_pid_schedstat), else nothing.
  void keep(std::string_view text);
  /// Whether `text` reads as the kept one: false when none is kept or it does not parse.
  bool same(std::string_view text) const;
};

/// One process as last read. `stat` is current when stat_gen equals the registry's current
/// sample (read then, or known unchanged: see ProcessRegistry::kQuietRefreshSamples); the
/// member fields when member_gen does.
struct ProcessRecord {
  explicit ProcessRecord(int root_fd, pid_t pid, FdBudget* budget) : handle(root_fd, pid, budget) {}

  ProcessHandle handle;
  std::uint32_t used_gen = 0;       // last sample it was listed or asked for
  std::uint32_t first_gen = 0;      // sample the record was made in
  std::uint64_t dir_ino = 0;        // d_ino of PID in the last listing (see refresh_listing)
  std::uint32_t stat_gen = 0;       // sample `stat` is current for
  std::uint32_t stat_read_gen = 0;  // sample `stat` was last read from the file in
  std::uint32_t member_gen = 0;     // sample the member fields are current for
  std::uint32_t memory_gen = 0;     // sample status and the fd count were last read in
  std::uint32_t quiet_gen = 0;      // sample schedstat showed no run since stat_read_gen
  PidStat stat;
  // schedstat read just before `stat` was last read: set only while the process has one
  // thread (schedstat describes the leader alone).
  KeptSchedstat sched;

  // Member fields: read only for processes that belong to a target.
  PidStatus status;
  std::optional<PidIo> io;
  std::optional<std::uint64_t> open_fds;  // empty when this sample could not count them
  std::optional<OpenFilesLimit> fd_limit;
  std::uint32_t fd_limit_gen = 0;  // sample the limit was read in
  bool partial = false;            // an EACCES in this sample's member read
  bool partial_logged = false;     // the debug line about it was written (once per process)
  // The CPU limit's inputs (collectors/targets.cpp), refreshed every kCpuLimitSamples
  // samples at the record's phase: the /proc/PID/cgroup text, read or confirmed by a
  // listing of its cgroups (process/cgroup_membership.h), and the limit it gave.
  std::shared_ptr<const std::string> cgroup_text;  // null when unreadable; shared by members
  bool cgroup_checkable = false;                   // a listing can confirm cgroup_text
  std::uint32_t cpu_limit_gen = 0;                 // sample the limit was refreshed in
  std::uint32_t cpu_limit_phase = 0;               // refreshed when (sample + phase) % period is 0
  std::optional<double> cpu_limit;

  pid_t pid() const { return handle.pid(); }
};

/// Owns every ProcessRecord and the procfs root fd. Used only from the sampler thread.
///
/// A sample goes: begin_sample(); optionally refresh_listing(); any number of stat()/member()
/// calls; end_sample(), which drops the records of processes that were neither listed nor
/// asked for (their fds are closed).
class ProcessRegistry {
 public:
  /// Opens the procfs root. Throws std::runtime_error when it cannot be opened.
  /// `budget`: where kept fds are counted (the daemon's shared one; tests pass their own).
  explicit ProcessRegistry(const FsRoot& proc, FdBudget& budget = FdBudget::shared());
  ~ProcessRegistry();
  ProcessRegistry(const ProcessRegistry&) = delete;
  ProcessRegistry& operator=(const ProcessRegistry&) = delete;

  const FsRoot& proc() const { return proc_; }
  int root_fd() const { return root_fd_; }
  std::uint32_t generation() const { return gen_; }

  void begin_sample();
  void end_sample();

  /// Lists the numeric entries of the root once per sample. New PIDs get their stat read,
  /// and a known PID's when its parent vanished (it was re-parented). With `full` (comm,
  /// exe and cmdline selectors need fresh comm and exec detection) also the stat of last
  /// sample's members, of processes first listed fewer than kScanYoungSamples ago, and of
  /// the others once every kScanRecheckSamples (see there). Records of PIDs not listed
  /// are dropped.
  ///
  /// The directory is not read again while loadavg's last allocated PID and number of tasks
  /// are as they were just before the last read: no task was created or reaped since, so
  /// the listing would give the same PIDs, and last sample's are walked instead, with the
  /// same stat reads. The directory is read at least every kListingReuseSamples.
  void refresh_listing(bool full);
  /// When no more than kMaxProbedPids PIDs were allocated since, the processes among them
  /// (found by probing each PID) are added to the walk, provided no task was reaped.
  /// Samples a listing is walked again at most before the directory is read.
  static constexpr std::uint32_t kListingReuseSamples = 16;
  static constexpr std::uint64_t kMaxProbedPids = 32;
  /// Listings read from the directory since the registry was made (the rest were reused).
  std::uint64_t listings_read() const { return listings_read_; }
  bool listed() const { return listed_gen_ == gen_; }
  /// Whether the last listing re-read every stat (see refresh_listing).
  bool listed_full() const { return listed() && listed_full_; }

  /// Every process of this sample's listing whose stat is readable. Valid until the next
  /// refresh_listing()/end_sample().
  const std::vector<ProcessRecord*>& processes() const { return listing_; }

  /// The record of `pid` with this sample's stat, or nullptr when the process does not
  /// exist (or its stat is unreadable). Re-opens the handle when the PID now names another
  /// process than the kept fds do.
  ProcessRecord* stat(pid_t pid);

  /// Like stat(), plus the member fields (status, io, open fds, fd limit) of this sample.
  /// Returns nullptr when the process is gone.
  ProcessRecord* member(pid_t pid);

  /// Children of `pid` by the ppid of listed processes; call after refresh_listing().
  void children_by_listing(pid_t pid, std::vector<pid_t>& out);

  /// Whether PID/task/TID/children exists (CONFIG_PROC_CHILDREN): unknown until tried.
  std::optional<bool> children_files() const { return children_files_; }
  /// Reads PID/task/TID/children of every thread of `pid`, appending child PIDs. Returns
  /// false when the kernel lacks the file (then children_files() is false).
  bool children_by_files(ProcessRecord& rec, std::vector<pid_t>& out);

  /// The last PID the kernel allocated (5th field of loadavg), read once per sample: when
  /// it did not change, no process or thread was created since. nullopt if unreadable.
  std::optional<std::uint64_t> last_pid();

  /// Seconds since the epoch of a start time in clock ticks after boot (btime-based).
  std::optional<double> start_time_seconds(std::uint64_t starttime_ticks) const;

  long clock_ticks() const { return clk_tck_; }
  long page_size() const { return page_size_; }
  /// Fds kept by the whole daemon (the budget is shared, see fd_budget.h).
  std::size_t fds_kept() const { return static_cast<std::size_t>(budget_->used()); }

  /// How often (in samples) the fd limit of a member is re-read: limits change rarely
  /// (prlimit) and /proc/PID/limits costs as much as /proc/PID/stat.
  static constexpr std::uint32_t kLimitRefreshSamples = 15;

  /// A process with one thread whose schedstat (time on a CPU, times run) did not move since
  /// its stat was read has not run: its stat, status, io and fd count are kept, for one small
  /// read instead of four. What can change without it running is re-read at least every
  /// kQuietRefreshSamples samples, at a phase set by the PID so that the re-reads spread:
  /// status (RSS and swap, under reclaim or another process's process_vm_writev) and the fd
  /// count (a table shared with another process without sharing threads). The fd limit is
  /// read with them (prlimit first: the fd count's fstat then proves the PID), and at least
  /// every kLimitRefreshSamples.
  ///
  /// The RSS part of that re-read is /proc/PID/statm, a fifth of status's cost: its resident
  /// is VmRSS's sum of the same counters. status is read again only when statm's resident no
  /// longer matches the kept VmRSS, or when swap may have moved (statm has no swap figure):
  /// the kept VmSwap is not 0, or /proc/swaps lists a swap area (see memory_unchanged()).
  static constexpr std::uint32_t kQuietRefreshSamples = 15;

  /// Times status was read since the registry was made (tests: statm stands in for it).
  std::uint64_t status_reads() const { return status_reads_; }

  /// With a full listing, a process that is not a member is checked (its comm and exec
  /// signature, through a stat read or a quiet schedstat) every sample while it is younger
  /// than kScanYoungSeconds (by its start time; on a fixture tree, for its first
  /// kScanYoungSamples listings), then once every kScanRecheckSamples at a phase set by its
  /// PID. A process that execs or renames itself into a target's comm later than that joins
  /// the target up to kScanRecheckSamples samples late; members, new PIDs (restarts) and
  /// exits are seen at once.
  static constexpr std::uint64_t kScanYoungSeconds = 16;
  /// Overrides kScanYoungSeconds (a test renames a child it cannot make 16 s old quickly).
  void set_scan_young_seconds(std::uint64_t seconds) { scan_young_seconds_ = seconds; }
  static constexpr std::uint32_t kScanYoungSamples = 16;
  static constexpr std::uint32_t kScanRecheckSamples = 16;

  /// Processes of this sample kept as they were because they had not run (see above).
  std::size_t quiet_this_sample() const { return quiet_count_; }

 private:
  /// Room for a schedstat or statm text (three or seven 20-digit numbers).
  static constexpr std::size_t kSmallText = 256;
  ProcessRecord* record(pid_t pid);
  /// Marks `rec` as used this sample (end_sample keeps it).
  void use(ProcessRecord& rec) {
    if (rec.used_gen != gen_) ++used_count_;
    rec.used_gen = gen_;
  }
  /// The record of `pid` in this sample's listing, without hashing: a search of the sorted
  /// PIDs from where the last one ended (members come in PID order). nullptr when not listed.
  ProcessRecord* listed_record(pid_t pid);
  /// `force`: read the file even when the process looks quiet (a PID that may name another
  /// process, a parent that vanished).
  bool read_stat(ProcessRecord& rec, bool force = false);
  /// Whether last sample's listing can be walked instead of reading the directory.
  bool listing_reusable();
  /// The Tgid of task `pid` (its status), nullopt when gone or unreadable.
  std::optional<pid_t> thread_group(pid_t pid);
  /// Whether a full listing checks `rec` this sample (see kScanRecheckSamples).
  bool scan_due(const ProcessRecord& rec) const;
  /// schedstat through the kept fd, one pread into `text` (kSmallText bytes), unparsed.
  ReadResult read_schedstat(ProcessRecord& rec, char* text, std::size_t& len);
  /// kFdsOnly: the memory figures were found unchanged (memory_unchanged()).
  enum class MemberRead { kAll, kMemoryAndFds, kFdsOnly, kLimitOnly };
  /// Whether the kept VmRSS and VmSwap of a quiet process still hold, by statm alone.
  bool memory_unchanged(ProcessRecord& rec);
  /// Whether /proc/swaps lists no swap area this sample (read once a sample when asked).
  bool no_swap_area();
  /// A small file of the procfs root (loadavg, swaps: read every sample) into `buf`, through
  /// `fd` kept open on a real procfs: a pread at offset 0 writes the text afresh, as for the
  /// per-process files, for one syscall instead of an open, two reads and a close. A fixture
  /// tree's file (a rename can replace it) or one past the budget is opened each time. False
  /// when unreadable or longer than `cap` - 1.
  bool read_root_small(const char* name, int& fd, char* buf, std::size_t cap, std::size_t& len);
  void read_member_fields(ProcessRecord& rec, MemberRead what);
  /// RLIMIT_NOFILE by prlimit(2): with the check read, ~1 us against ~10 us for opening,
  /// formatting and closing /proc/PID/limits;
  /// nullopt when the file must be read instead (another PID namespace, EPERM, gone).
  std::optional<OpenFilesLimit> fd_limit_by_syscall(ProcessRecord& rec);
  /// prlimit(2) alone: whom it describes is for the caller to prove (a later read through a
  /// kept fd).
  std::optional<OpenFilesLimit> prlimit_nofile(pid_t pid) const;

  FsRoot proc_;
  int root_fd_ = -1;
  bool procfs_ = false;    // the root is a real procfs (st_size of fd dirs is trusted)
  bool own_pids_ = false;  // ... and it is this namespace's /proc (prlimit() by PID works)
  // ... and /proc/self names this process: loadavg's last PID counts the PIDs of this /proc
  bool same_pid_ns_ = false;
  FdBudget* budget_;
  std::uint32_t gen_ = 0;
  std::uint32_t listed_gen_ = 0;
  bool listed_full_ = false;
  std::unordered_map<pid_t, std::unique_ptr<ProcessRecord>> records_;
  std::vector<ProcessRecord*> listing_;
  std::vector<pid_t> listed_pids_;  // listing_'s PIDs, in its order
  bool listing_sorted_ = false;     // ... which is by PID (readdir's order on procfs)
  std::size_t lookup_at_ = 0;       // where listed_record() last ended
  std::size_t used_count_ = 0;      // records used this sample
  // The PIDs (and d_ino) of the last listing read from the directory, for walking it again,
  // with their records, which spares a lookup by PID per listed process: null where none was
  // taken yet, or where end_sample dropped it.
  struct DirEntry {
    pid_t pid;
    std::uint64_t ino;
    ProcessRecord* rec;
  };
  std::vector<DirEntry> dir_entries_;
  std::vector<DirEntry> old_entries_;  // the previous ones, while the directory is read
  std::uint32_t dir_gen_ = 0;          // sample it was read in
  std::uint64_t dir_last_pid_ = 0;     // loadavg's last PID read just before it
  std::uint64_t dir_tasks_ = 0;        // ... and its number of tasks
  std::uint64_t listings_read_ = 0;
  std::vector<std::pair<pid_t, pid_t>> by_parent_;  // (ppid, pid), sorted; built lazily
  std::uint32_t by_parent_gen_ = 0;
  std::optional<bool> children_files_;
  std::optional<std::uint64_t> boot_time_;
  std::optional<std::uint64_t> last_pid_;
  std::optional<std::uint64_t> tasks_;  // loadavg's number of tasks, read with last_pid_
  std::uint32_t last_pid_gen_ = 0;
  std::size_t quiet_count_ = 0;
  std::uint64_t status_reads_ = 0;
  int loadavg_fd_ = -1;  // kept by read_root_small, -1 until first read
  int swaps_fd_ = -1;
  std::uint32_t swaps_gen_ = 0;  // sample /proc/swaps was read in
  bool no_swap_area_ = false;
  std::optional<std::uint64_t> boot_ticks_;  // CLOCK_BOOTTIME in ticks at this listing
  std::uint64_t scan_young_seconds_ = kScanYoungSeconds;
  long clk_tck_ = 100;
  long page_size_ = 4096;
  std::string buf_;
  std::string task_buf_;
};

}  // namespace loadwatch
