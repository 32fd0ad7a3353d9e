#include "process/process_registry.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <stdexcept>

#include "procfs/proc_boot_time.h"

namespace loadwatch {

ProcessRegistry::ProcessRegistry(const FsRoot& proc, FdBudget& budget)
    : proc_(proc), budget_(&budget) {
  root_fd_ = ::open(proc_.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd_ < 0) {
    throw std::runtime_error(proc_.root() + ": " + std::strerror(errno));
  }
  struct statfs sfs {};
  procfs_ = ::fstatfs(root_fd_, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
  // prlimit() takes a PID of this process's namespace: only the /proc of this kernel and
  // namespace numbers processes the same way (as for sock_diag, docs/tcp.md).
  own_pids_ = procfs_ && proc_.root() == "/proc";
  // A /proc of another PID namespace (a host's /proc in a container) has PIDs this process's
  // loadavg does not count: /proc/self names this process only in its own namespace.
  if (own_pids_) {
    char self[32] = {};
    const ssize_t n = ::readlinkat(root_fd_, "self", self, sizeof self - 1);
    pid_t pid = 0;
    same_pid_ns_ = n > 0 && parse_pid_name(self, pid) && pid == ::getpid();
  }

  if (long t = ::sysconf(_SC_CLK_TCK); t > 0) clk_tck_ = t;
  if (long p = ::sysconf(_SC_PAGESIZE); p > 0) page_size_ = p;
  std::string text;
  if (proc_.read("stat", text) == 0) boot_time_ = parse_boot_time(text);
}

ProcessRegistry::~ProcessRegistry() {
  records_.clear();  // closes the handles before the root fd they are relative to
  for (int fd : {loadavg_fd_, swaps_fd_}) {
    if (fd < 0) continue;
    ::close(fd);
    budget_->give();
  }
  if (root_fd_ >= 0) ::close(root_fd_);
}

void ProcessRegistry::begin_sample() {
  budget_->refresh();  // one getrlimit() a sample
  ++gen_;
  if (gen_ == 0) gen_ = 1;  // 0 means "never"
  listing_.clear();
  listed_pids_.clear();
  quiet_count_ = 0;
  used_count_ = 0;
}

void ProcessRegistry::end_sample() {
  // Nothing to drop when every record was used (the common case: walking the map is a node
  // per process).
  if (used_count_ != records_.size()) {
    // The last listing's entries of the records that go are cleared first (their PIDs are
    // looked up again if listed later); the others keep theirs: no lookup by PID for them.
    for (DirEntry& e : dir_entries_) {
      if (e.rec && e.rec->used_gen != gen_) e.rec = nullptr;
    }
    for (auto it = records_.begin(); it != records_.end();) {
      if (it->second->used_gen != gen_) {
        it = records_.erase(it);
      } else {
        ++it;
      }
    }
  }
  listing_.clear();
  listed_pids_.clear();
}

ProcessRecord* ProcessRegistry::record(pid_t pid) {
  auto& slot = records_[pid];
  if (!slot) {
    slot = std::make_unique<ProcessRecord>(root_fd_, pid, budget_);
    slot->first_gen = gen_;
  }
  return slot.get();
}

void KeptSchedstat::keep(std::string_view text) {
  static_assert(sizeof(PidSchedstat) <= sizeof bytes);
  len = kNone;
  const std::optional<PidSchedstat> parsed = parse_pid_schedstat(text);
  if (!parsed) return;
  if (text.size() <= sizeof bytes) {
    std::memcpy(bytes, text.data(), text.size());
    len = static_cast<std::uint8_t>(text.size());
  } else {
    std::memcpy(bytes, &*parsed, sizeof *parsed);
    len = kParsed;
  }
}

bool KeptSchedstat::same(std::string_view text) const {
  if (len == kNone) return false;
  if (len != kParsed) return text.size() == len && std::memcmp(text.data(), bytes, len) == 0;
  const std::optional<PidSchedstat> now = parse_pid_schedstat(text);
  PidSchedstat kept;
  std::memcpy(&kept, bytes, sizeof kept);
  return now && *now == kept;
}

ReadResult ProcessRegistry::read_schedstat(ProcessRecord& rec, char* text, std::size_t& len) {
  // The read every listed process costs each sample: one pread into the stack.
  return rec.handle.read_small(ProcessHandle::kSchedstat, text, kSmallText, len);
}

bool ProcessRegistry::read_stat(ProcessRecord& rec, bool force) {
  if (rec.stat_gen == gen_ && (!force || rec.stat_read_gen == gen_)) return true;
  char sched[kSmallText];
  std::size_t sched_len = 0;
  bool sched_read = false;
  const bool checked = !force && rec.sched.has_value() && rec.stat.num_threads == 1;
  if (checked && rec.stat_read_gen != 0) {
    // Quiet when schedstat still reads as when stat was read: it did not run since.
    sched_read = read_schedstat(rec, sched, sched_len) == ReadResult::Ok;
    if (sched_read && rec.sched.same(std::string_view(sched, sched_len))) {
      rec.stat_gen = gen_;
      rec.quiet_gen = gen_;
      ++quiet_count_;
      return true;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    // schedstat before stat: a run after this read moves it, and is seen next sample. Read
    // only while the process may have one thread (a new record: not known yet), and not
    // twice: the check above already read it.
    if (attempt > 0 || !checked) {
      sched_read = false;
      if (rec.stat_read_gen == 0 || rec.stat.num_threads == 1) {
        sched_read = read_schedstat(rec, sched, sched_len) == ReadResult::Ok;
      }
    }
    ReadResult r = rec.handle.read(ProcessHandle::kStat, buf_);
    if (r == ReadResult::Gone && attempt == 0 && rec.stat_gen != 0) {
      // The kept fd belongs to a process that exited; the PID may name a new one now.
      rec.handle.close_all();
      continue;
    }
    if (r != ReadResult::Ok) return false;
    auto parsed = parse_pid_stat(buf_);
    if (!parsed) return false;
    if (rec.stat_gen != 0 && parsed->starttime != rec.stat.starttime) {
      // Another process under the same PID (fds were not kept, or just re-opened): forget
      // everything read about the old one.
      rec.member_gen = 0;
      rec.fd_limit.reset();
      rec.fd_limit_gen = 0;
      rec.partial_logged = false;
    }
    rec.stat = std::move(*parsed);
    rec.stat_gen = gen_;
    rec.stat_read_gen = gen_;
    rec.sched = KeptSchedstat{};
    if (rec.stat.num_threads == 1 && sched_read) rec.sched.keep(std::string_view(sched, sched_len));
    return true;
  }
  return false;
}

void ProcessRegistry::refresh_listing(bool full) {
  if (listed_gen_ == gen_ && (listed_full_ || !full)) return;
  boot_ticks_.reset();
  struct timespec boot {};
  if (own_pids_ && ::clock_gettime(CLOCK_BOOTTIME, &boot) == 0) {
    // The clock start times count in (stat's starttime: ticks since boot, fs/proc/array.c).
    boot_ticks_ = static_cast<std::uint64_t>(boot.tv_sec) * static_cast<std::uint64_t>(clk_tck_) +
                  static_cast<std::uint64_t>(boot.tv_nsec) * static_cast<std::uint64_t>(clk_tck_) /
                      1000000000u;
  }
  listing_.clear();
  listed_pids_.clear();
  listing_sorted_ = true;
  lookup_at_ = 0;
  auto add = [&](pid_t pid, std::uint64_t ino, ProcessRecord* rec) {
    // d_ino of a /proc/PID entry stays the same while its dentry lives; a PID reused by a
    // new process gets a new inode. A cheap hint to re-read a known PID without `full`.
    const bool changed = rec->dir_ino != ino;
    rec->dir_ino = ino;
    if (changed || rec->stat_gen == 0 || (full && scan_due(*rec))) {
      if (!read_stat(*rec, changed)) return;
    }
    use(*rec);
    if (!listed_pids_.empty() && listed_pids_.back() >= pid) listing_sorted_ = false;
    listing_.push_back(rec);
    listed_pids_.push_back(pid);
  };
  const bool reused = listing_reusable();
  if (reused) {
    for (DirEntry& e : dir_entries_) {
      if (!e.rec) e.rec = record(e.pid);
      add(e.pid, e.ino, e.rec);
    }
  } else {
    // loadavg before the directory: a PID allocated while it is read moves it for next time.
    const std::optional<std::uint64_t> last = last_pid();
    int err = 0;
    DIR* dir = open_dir_at(root_fd_, ".", err);
    if (!dir) return;
    // The last entries' records by a merge walk (both in readdir's PID order): a lookup by
    // PID only for a process that is new (or when a record was dropped since).
    old_entries_.swap(dir_entries_);
    dir_entries_.clear();
    auto old = old_entries_.begin();
    while (struct dirent* e = ::readdir(dir)) {
      pid_t pid = 0;
      if (!parse_pid_name(e->d_name, pid)) continue;
      while (old != old_entries_.end() && old->pid < pid) ++old;
      ProcessRecord* rec =
          old != old_entries_.end() && old->pid == pid && old->rec ? old->rec : record(pid);
      dir_entries_.push_back({pid, e->d_ino, rec});
      add(pid, e->d_ino, rec);
    }
    ::closedir(dir);
    ++listings_read_;
    dir_gen_ = last && tasks_ ? gen_ : 0;
    dir_last_pid_ = last.value_or(0);
    dir_tasks_ = tasks_.value_or(0);
  }
  listed_gen_ = gen_;
  listed_full_ = full;

  // A process whose parent exited was re-parented (to init or a subreaper) without running:
  // its cached ppid is stale. Re-read the stat of those only. The parent's entry goes when
  // it is reaped, which a reused listing rules out (no task was reaped since the directory
  // was read, and this check ran then).
  if (reused) return;
  for (ProcessRecord* rec : listing_) {
    if (rec->stat_read_gen == gen_ || rec->stat.ppid <= 0) continue;
    if (listing_sorted_) {
      if (!listed_record(rec->stat.ppid)) read_stat(*rec, true);
      continue;
    }
    auto it = records_.find(rec->stat.ppid);
    if (it == records_.end() || it->second->used_gen != gen_) read_stat(*rec, true);
  }
}

ProcessRecord* ProcessRegistry::listed_record(pid_t pid) {
  if (!listing_sorted_ || listed_gen_ != gen_) return nullptr;
  const std::size_t n = listed_pids_.size();
  std::size_t i = lookup_at_ < n && listed_pids_[lookup_at_] <= pid ? lookup_at_ : 0;
  for (int step = 0; step < 4 && i < n && listed_pids_[i] < pid; ++step) ++i;
  if (i < n && listed_pids_[i] < pid) {
    i = static_cast<std::size_t>(
        std::lower_bound(listed_pids_.begin() + static_cast<std::ptrdiff_t>(i), listed_pids_.end(),
                         pid) -
        listed_pids_.begin());
  }
  lookup_at_ = i;
  return i < n && listed_pids_[i] == pid ? listing_[i] : nullptr;
}

bool ProcessRegistry::listing_reusable() {
  // Last sample listed, recently enough read from the directory, no task reaped since (a
  // /proc/PID entry goes when its process is reaped) and none created, or only ones probed
  // below: the same set of processes as a listing would give (zombies included). loadavg's
  // last PID returns to the same number only after pid_max allocations (4,194,304 on 64-bit
  // by default), which the kListingReuseSamples bound makes moot.
  if (!same_pid_ns_ || dir_gen_ == 0 || gen_ - listed_gen_ != 1 ||
      gen_ - dir_gen_ >= kListingReuseSamples) {
    return false;
  }
  const std::optional<std::uint64_t> last = last_pid();
  if (!last || !tasks_) return false;
  if (*last == dir_last_pid_ && *tasks_ == dir_tasks_) return true;
  // A few tasks created since (a host that forks now and then): the PIDs allocated since the
  // last reading are probed. When the tasks alive among them are all the tasks gained, none
  // was reaped, and the new processes among them are added to the walk.
  if (*last <= dir_last_pid_ || *last - dir_last_pid_ > kMaxProbedPids) return false;
  // At most one task gained per PID allocated, and none lost: a count outside that cannot
  // match whatever the probes find (a task reaped, the common case on a busy host).
  if (*tasks_ < dir_tasks_ || *tasks_ - dir_tasks_ > *last - dir_last_pid_) return false;
  // The count first (an fstatat each): on a host whose builds fork and reap every second it
  // mostly fails, and then the status reads are not paid for.
  std::vector<std::pair<pid_t, std::uint64_t>> alive;
  for (std::uint64_t p = dir_last_pid_ + 1; p <= *last; ++p) {
    const pid_t pid = static_cast<pid_t>(p);
    const std::string name = std::to_string(pid);
    struct stat st {};
    // /proc/TID of a thread is reachable though not listed: a task either way.
    if (::fstatat(root_fd_, name.c_str(), &st, 0) == 0) alive.emplace_back(pid, st.st_ino);
  }
  if (*tasks_ != dir_tasks_ + alive.size()) return false;
  std::vector<std::pair<pid_t, std::uint64_t>> fresh;
  for (const auto& entry : alive) {
    const std::optional<pid_t> tgid = thread_group(entry.first);
    if (!tgid) return false;
    if (*tgid == entry.first) fresh.push_back(entry);
  }
  for (const auto& [pid, ino] : fresh) dir_entries_.push_back({pid, ino, nullptr});
  dir_last_pid_ = *last;
  dir_tasks_ = *tasks_;
  return true;
}

std::optional<pid_t> ProcessRegistry::thread_group(pid_t pid) {
  const std::string rel = std::to_string(pid) + "/status";
  const int fd = ::openat(root_fd_, rel.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  // "Name:\t...\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1234\n" (fs/proc/array.c)
  const std::string_view view(text, static_cast<std::size_t>(n));
  const auto at = view.find("\nTgid:\t");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view rest = view.substr(at + 7);
  pid_t tgid = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), tgid);
  if (ec != std::errc() || p == rest.data() + rest.size() || *p != '\n') return std::nullopt;
  return tgid;
}

bool ProcessRegistry::scan_due(const ProcessRecord& rec) const {
  // Last sample's members: read below anyway, so their comm and exec never lag the match.
  if (rec.member_gen != 0 && gen_ - rec.member_gen <= 1) return true;
  // New processes: most exec (a launcher's fork, then exec) or rename themselves early. Their
  // age comes from the start time where the boot clock is this kernel's, else from the
  // first listing (a fixture tree).
  if (boot_ticks_ && rec.stat_read_gen != 0) {
    if (*boot_ticks_ <
        rec.stat.starttime + scan_young_seconds_ * static_cast<std::uint64_t>(clk_tck_)) {
      return true;
    }
  } else if (gen_ - rec.first_gen < kScanYoungSamples) {
    return true;
  }
  return gen_ - rec.stat_gen >= kScanRecheckSamples ||
         (gen_ + static_cast<std::uint32_t>(rec.pid())) % kScanRecheckSamples == 0;
}

ProcessRecord* ProcessRegistry::stat(pid_t pid) {
  if (pid <= 0) return nullptr;
  ProcessRecord* rec = listed_record(pid);
  if (!rec) rec = record(pid);
  if (!read_stat(*rec)) return nullptr;
  use(*rec);
  return rec;
}

ProcessRecord* ProcessRegistry::member(pid_t pid) {
  ProcessRecord* rec = stat(pid);
  if (!rec) return nullptr;
  if (rec->member_gen != gen_) {
    // Kept when they were read after the schedstat that still holds, in full.
    const bool quiet = rec->quiet_gen == gen_ && rec->member_gen != 0 &&
                       gen_ - rec->member_gen <= gen_ - rec->stat_read_gen && !rec->partial &&
                       rec->open_fds.has_value();
    if (!quiet) {
      read_member_fields(*rec, MemberRead::kAll);
    } else if (gen_ - rec->memory_gen >= kQuietRefreshSamples ||
               (gen_ + static_cast<std::uint32_t>(rec->pid())) % kQuietRefreshSamples == 0) {
      read_member_fields(*rec,
                         memory_unchanged(*rec) ? MemberRead::kFdsOnly : MemberRead::kMemoryAndFds);
    } else {
      read_member_fields(*rec, MemberRead::kLimitOnly);
    }
  }
  return rec;
}

void ProcessRegistry::read_member_fields(ProcessRecord& rec, MemberRead what) {
  rec.member_gen = gen_;
  auto note = [&rec](ReadResult r) {
    if (r == ReadResult::Denied) rec.partial = true;
    return r == ReadResult::Ok;
  };
  // The limit can change without the process running (prlimit by another process).
  const bool limit_due = rec.fd_limit_gen == 0 || gen_ - rec.fd_limit_gen >= kLimitRefreshSamples;
  auto refresh_limit = [&] {
    if (limit_due) {
      rec.fd_limit_gen = gen_;
      if (auto limit = fd_limit_by_syscall(rec)) {
        rec.fd_limit = limit;
      } else if (note(rec.handle.read_other("limits", buf_))) {
        rec.fd_limit = parse_max_open_files(buf_);
      } else {
        rec.fd_limit.reset();
      }
    }
  };
  if (what == MemberRead::kLimitOnly) {
    refresh_limit();
    return;
  }
  rec.memory_gen = gen_;
  rec.partial = false;

  // With a quiet member's memory re-read (every kQuietRefreshSamples at most, spread by PID)
  // the limit is asked for first: the fd count's fstat through the directory fd kept since an
  // earlier sample (pinned to the process) then proves the PID still named this process, and
  // fd_limit_by_syscall's own read after prlimit is spared.
  std::optional<OpenFilesLimit> early;
  const bool proof = procfs_ && rec.handle.kept(ProcessHandle::kFdDir);
  if (proof && (what != MemberRead::kAll || limit_due)) early = prlimit_nofile(rec.pid());

  if (what != MemberRead::kFdsOnly) {
    ++status_reads_;
    if (note(rec.handle.read(ProcessHandle::kStatus, buf_))) {
      rec.status = parse_pid_status(buf_);
    } else {
      rec.status = PidStatus{};
    }
  }
  // /proc/PID/io needs ptrace access (PTRACE_MODE_READ_FSCREDS, fs/proc/base.c
  // do_io_accounting): EACCES for another user's process without CAP_SYS_PTRACE. Its
  // counters move only while the process runs.
  if (what == MemberRead::kAll) {
    if (note(rec.handle.read(ProcessHandle::kIo, buf_))) {
      rec.io = parse_pid_io(buf_);
    } else {
      rec.io.reset();
    }
  }
  std::uint64_t fds = 0;
  bool by_size = false;
  if (note(rec.handle.open_fd_count(procfs_, fds, &by_size))) {
    rec.open_fds = fds;
    // The proof: the kernel sized the kept directory fd's task after prlimit ran. A listing
    // by path (Linux < 6.2, or no fd open) proves nothing, and the check read below runs.
    if (early && by_size) {
      rec.fd_limit = early;
      rec.fd_limit_gen = gen_;
      return;
    }
  } else {
    rec.open_fds.reset();
  }

  refresh_limit();
}

bool ProcessRegistry::memory_unchanged(ProcessRecord& rec) {
  // A fixture tree's statm (if any) is not this kernel's view of the status beside it.
  if (!procfs_ || !rec.status.vm_rss_bytes) return false;
  // Swap moves without a run (reclaim, swapoff) and statm does not show it. A page swapped
  // out or in moves the resident count too, but another change (a file page reclaimed, a
  // remote write) could make up for it in the same interval: statm stands in only where no
  // page of the process can be out: none was at the last status read, and no swap area exists.
  if (rec.status.vm_swap_bytes.value_or(0) != 0 || !no_swap_area()) return false;
  char text[kSmallText];
  std::size_t len = 0;
  if (rec.handle.read_small(ProcessHandle::kStatm, text, sizeof text, len) != ReadResult::Ok) {
    return false;
  }
  const std::optional<std::uint64_t> resident =
      parse_pid_statm_resident(std::string_view(text, len));
  return resident && *resident * static_cast<std::uint64_t>(page_size_) == *rec.status.vm_rss_bytes;
}

bool ProcessRegistry::no_swap_area() {
  if (swaps_gen_ != gen_) {
    swaps_gen_ = gen_;
    // The header line alone when no area is in use. An area stays listed until its swapoff
    // has brought every page back (mm/swapfile.c clears SWP_USED last).
    no_swap_area_ = false;
    // A text longer than the header's ~40 bytes lists an area: the first 255 bytes tell.
    char text[kSmallText];
    std::size_t len = 0;
    if (read_root_small("swaps", swaps_fd_, text, sizeof text, len) || len == sizeof text - 1) {
      const std::string_view view(text, len);
      const auto eol = view.find('\n');
      no_swap_area_ = view.substr(0, 8) == "Filename" &&
                      (eol == std::string_view::npos || eol + 1 == view.size());
    }
  }
  return no_swap_area_;
}

bool ProcessRegistry::read_root_small(const char* name, int& fd, char* buf, std::size_t cap,
                                      std::size_t& len) {
  len = 0;
  int use = fd;
  if (use < 0) {
    use = ::openat(root_fd_, name, O_RDONLY | O_CLOEXEC);
    if (use < 0) return false;
    if (procfs_ && budget_->take()) fd = use;
  }
  ssize_t n;
  do {
    n = ::pread(use, buf, cap, 0);
  } while (n < 0 && errno == EINTR);
  if (use != fd) ::close(use);
  if (n < 0) return false;
  // Whole only below `cap`: a text that fills it may go on (len says how much was read).
  len = static_cast<std::size_t>(n) < cap ? static_cast<std::size_t>(n) : cap - 1;
  return static_cast<std::size_t>(n) < cap;
}

std::optional<OpenFilesLimit> ProcessRegistry::prlimit_nofile(pid_t pid) const {
  if (!own_pids_) return std::nullopt;
  struct rlimit rl {};
  // EPERM for another user's process without CAP_SYS_RESOURCE: the file is world-readable.
  if (::prlimit(pid, RLIMIT_NOFILE, nullptr, &rl) != 0) return std::nullopt;
  auto limit = [](rlim_t v) {
    return v == RLIM_INFINITY ? OpenFilesLimit::kUnlimited : static_cast<std::uint64_t>(v);
  };
  return OpenFilesLimit{limit(rl.rlim_cur), limit(rl.rlim_max)};
}

std::optional<OpenFilesLimit> ProcessRegistry::fd_limit_by_syscall(ProcessRecord& rec) {
  const std::optional<OpenFilesLimit> limit = prlimit_nofile(rec.pid());
  if (!limit) return std::nullopt;
  // The PID named this process when prlimit ran if the kept fd still reads after it: a PID
  // is not reused while its process (or zombie) exists.
  char text[kSmallText];
  std::size_t len = 0;
  if (read_schedstat(rec, text, len) != ReadResult::Ok) return std::nullopt;
  return limit;
}

void ProcessRegistry::children_by_listing(pid_t pid, std::vector<pid_t>& out) {
  if (by_parent_gen_ != gen_ || listed_gen_ != gen_) {
    by_parent_.clear();
    by_parent_.reserve(listing_.size());
    for (const ProcessRecord* rec : listing_) by_parent_.emplace_back(rec->stat.ppid, rec->pid());
    std::sort(by_parent_.begin(), by_parent_.end());
    by_parent_gen_ = gen_;
  }
  auto lo = std::lower_bound(by_parent_.begin(), by_parent_.end(), std::pair<pid_t, pid_t>(pid, 0));
  for (auto it = lo; it != by_parent_.end() && it->first == pid; ++it) out.push_back(it->second);
}

bool ProcessRegistry::children_by_files(ProcessRecord& rec, std::vector<pid_t>& out) {
  if (children_files_ == false) return false;
  const pid_t pid = rec.pid();
  auto read_one = [&](const std::string& tid) -> ReadResult {
    std::string rel = "task/" + tid + "/children";
    ReadResult r = rec.handle.read_other(rel.c_str(), buf_);
    if (r != ReadResult::Ok) return r;
    // proc(5): "a space-separated list of child tasks of this task".
    std::string_view rest = buf_;
    while (!rest.empty()) {
      size_t b = rest.find_first_not_of(" \n");
      if (b == std::string_view::npos) break;
      size_t e = rest.find_first_of(" \n", b);
      std::string_view f = rest.substr(b, e == std::string_view::npos ? rest.npos : e - b);
      pid_t child = 0;
      auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), child);
      if (ec == std::errc() && p == f.data() + f.size() && child > 0) out.push_back(child);
      rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e);
    }
    return r;
  };
  // Children hang off the thread that forked them: a single-threaded process needs one
  // read, others one per thread (task/ listed).
  if (rec.stat.num_threads <= 1) {
    ReadResult r = read_one(std::to_string(pid));
    if (r == ReadResult::Gone && !children_files_) {
      // The process exists (its stat was just read), so a missing file means the kernel
      // was built without CONFIG_PROC_CHILDREN.
      if (rec.handle.read(ProcessHandle::kStat, buf_) == ReadResult::Ok) {
        children_files_ = false;
        return false;
      }
    }
    if (r == ReadResult::Ok) children_files_ = true;
    return true;
  }
  if (ReadResult r = rec.handle.list_tasks(task_buf_); r != ReadResult::Ok) {
    // No task/ in a live process: not a real procfs (a fixture tree without the files).
    if (r == ReadResult::Gone && !children_files_ &&
        rec.handle.read(ProcessHandle::kStat, buf_) == ReadResult::Ok) {
      children_files_ = false;
      return false;
    }
    return true;
  }
  std::string_view rest = task_buf_;
  while (!rest.empty()) {
    auto sp = rest.find(' ');
    std::string tid(rest.substr(0, sp));
    rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
    if (tid.empty()) continue;
    ReadResult r = read_one(tid);
    if (r == ReadResult::Ok) {
      children_files_ = true;
    } else if (r == ReadResult::Gone && !children_files_ && tid == std::to_string(pid)) {
      children_files_ = false;
      return false;
    }
  }
  return true;
}

std::optional<std::uint64_t> ProcessRegistry::last_pid() {
  if (last_pid_gen_ == gen_) return last_pid_;
  last_pid_gen_ = gen_;
  last_pid_.reset();
  tasks_.reset();
  // "0.20 0.18 0.12 1/80 11206": the last field is the most recently allocated PID
  // (proc(5) loadavg; kernel/pid.c idr_get_cursor of the reader's PID namespace), the one
  // after the slash the number of tasks (nr_threads: a task leaves it when it is reaped).
  char buf[kSmallText];
  std::size_t len = 0;
  if (!read_root_small("loadavg", loadavg_fd_, buf, sizeof buf, len)) return last_pid_;
  std::string_view text(buf, len);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  auto number = [](std::string_view field) -> std::optional<std::uint64_t> {
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || p != field.data() + field.size()) return std::nullopt;
    return v;
  };
  const auto sp = text.rfind(' ');
  if (sp == std::string_view::npos) return last_pid_;
  last_pid_ = number(text.substr(sp + 1));
  const std::string_view before = text.substr(0, sp);
  const auto slash = before.rfind('/');
  if (slash != std::string_view::npos) tasks_ = number(before.substr(slash + 1));
  return last_pid_;
}

std::optional<double> ProcessRegistry::start_time_seconds(std::uint64_t starttime_ticks) const {
  if (!boot_time_) return std::nullopt;
  return static_cast<double>(*boot_time_) +
         static_cast<double>(starttime_ticks) / static_cast<double>(clk_tck_);
}

}  // namespace loadwatch
