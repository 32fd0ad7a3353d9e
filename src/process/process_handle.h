#pragma once
// Open handles on one process's /proc files, re-read with pread() every sample.
//
// Why not libproc2: procps_pids_select() (chunks of 255 PIDs) costs 1.4-1.7x the raw floor
// of reading stat+status+io+fd count (bench/targets_bench --libproc2, docs/benchmarks.md), at
// or over the 1.5x budget of the targets collector, and it has no open-fd count and no kept
// fds. Why persistent fds: open+read+close of a /proc file costs ~3
// syscalls, pread() on a kept fd one. procfs regenerates a single_open seq_file on every read at
// offset 0 (fs/seq_file.c seq_read_iter), so a kept fd always gives fresh text, measured here at
// ~15 us per process for stat+status+io+fd count against ~30 us for open/read/close.
// A kept fd is also pinned to the process (struct pid), not to the number: once the
// process exits, reads fail with ESRCH even if the PID is reused, so PID reuse can never
// mix two processes' numbers.

#include <dirent.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "process/fd_budget.h"

namespace loadwatch {

/// Outcome of one read. Gone covers ENOENT/ESRCH (the process exited: a normal race);
/// Denied covers EACCES/EPERM (another user's process, no capability); Failed is anything
/// else (e.g. EMFILE): the process may still exist, its data is just missing this sample.
enum class ReadResult { Ok, Gone, Denied, Failed };

/// Maps an errno of a /proc access to a ReadResult.
ReadResult read_result_from_errno(int err);

/// Whether a /proc entry's name is a PID ("1234"; not "self", "net", "0").
bool parse_pid_name(const char* name, pid_t& pid);

/// The inode of a socket fd's link text ("socket:[12345]"); false for anything else.
bool parse_socket_link(std::string_view link, std::uint64_t& inode);

/// opendir() of `relative` below the directory fd `dirfd`; nullptr with `err` set on
/// failure. closedir() closes the fd it opened.
DIR* open_dir_at(int dirfd, const char* relative, int& err);

/// The handles of one process. Not copyable; closes its fds when destroyed. Used only from
/// the sampler thread. `root_fd` (an fd on the procfs root) must outlive the handle.
class ProcessHandle {
 public:
  /// The files kept open between samples (statm and cgroup once first read: the periodic
  /// re-reads of processes that did not run).
  enum File { kStat, kStatus, kIo, kFdDir, kSchedstat, kStatm, kCgroup, kFileCount };

  ProcessHandle(int root_fd, pid_t pid, FdBudget* budget);
  ~ProcessHandle();
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;

  pid_t pid() const { return pid_; }
  /// Whether `file` is held open (pinned to the process since it was opened).
  bool kept(File file) const { return fds_[file] >= 0; }

  /// Reads the whole text of stat, status, io, schedstat, statm or cgroup into `buf` (pread at
  /// offset 0 on the kept fd, or open/read/close when the budget is used up).
  ReadResult read(File file, std::string& buf);

  /// Reads a text that fits in `cap` bytes (schedstat, statm: a few numbers) into `buf` with
  /// one pread, without the string handling of read(); `len` gets its length. A text that
  /// fills `cap` may be cut: Failed then.
  ReadResult read_small(File file, char* buf, std::size_t cap, std::size_t& len);

  /// Reads a file that is not kept open, relative to PID/: "limits", "cmdline",
  /// "task/TID/children". With `max_bytes`, only the first max_bytes of it (the rest is
  /// not read: "cmdline" can be megabytes).
  ReadResult read_other(const char* relative, std::string& buf, std::size_t max_bytes = 0);

  /// readlink() of PID/relative ("exe", "fd/12").
  ReadResult readlink(const char* relative, std::string& out);

  /// Open fds of the process. With `trust_st_size` (the root is procfs, Linux >= 6.2),
  /// fstat() of the fd directory gives the count in st_size; when that is 0 (older kernel,
  /// or really no fd) or not trusted (a fixture tree), entries are counted. `by_size`: set
  /// when the count came from st_size, which the kernel gives only while the task the kept
  /// directory fd was opened for still exists.
  ReadResult open_fd_count(bool trust_st_size, std::uint64_t& count, bool* by_size = nullptr);

  /// Calls fn(fd_number, link_target) for each entry of PID/fd (used to find a socket's
  /// owner). Returns Denied when the directory cannot be listed.
  template <class Fn>
  ReadResult for_each_fd(Fn&& fn);

  /// Lists PID/task (thread ids). Returns Gone/Denied like the reads.
  ReadResult list_tasks(std::string& names_buf);

  /// Closes `file`'s kept fd, if any (the next read opens it again, pinned to whichever
  /// process then has the PID).
  void close(File file);

  /// Closes every kept fd (after the process is gone, or to re-open for a new process).
  void close_all();

 private:
  ReadResult open_kept(File file, int& fd);
  ReadResult list_fd_dir(void (*fn)(void*, int, const std::string&), void* arg);

  int root_fd_;
  pid_t pid_;
  FdBudget* budget_;
  int fds_[kFileCount];
};

template <class Fn>
ReadResult ProcessHandle::for_each_fd(Fn&& fn) {
  return list_fd_dir(
      [](void* arg, int fd, const std::string& target) { (*static_cast<Fn*>(arg))(fd, target); },
      &fn);
}

}  // namespace loadwatch
