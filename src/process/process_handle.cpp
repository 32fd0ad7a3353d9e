#include "process/process_handle.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace loadwatch {

namespace {

constexpr const char* kNames[ProcessHandle::kFileCount] = {"stat",      "status", "io",    "fd",
                                                           "schedstat", "statm",  "cgroup"};

// Reads from offset 0 until EOF. One pread() normally does it: a single_open seq_file hands
// out its whole text when the buffer is large enough, and a short read of one is its end.
// The buffer grows (and the read is redone from 0) for larger texts.
int pread_all(int fd, std::string& buf) {
  if (buf.capacity() < 4096) buf.reserve(4096);
  size_t cap = buf.capacity();
  for (int attempt = 0; attempt < 16; ++attempt) {
    buf.resize(cap);
    size_t got = 0;
    for (;;) {
      ssize_t n = ::pread(fd, buf.data() + got, cap - got, static_cast<off_t>(got));
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        buf.clear();
        return err;
      }
      got += static_cast<size_t>(n);
      if (n == 0 || got < cap) {  // EOF, or a short read: the whole text
        buf.resize(got);
        return 0;
      }
      break;  // buffer full: maybe more; grow and re-read from 0 for one consistent text
    }
    cap *= 2;
  }
  buf.clear();
  return EFBIG;
}

// Reads the first `max` bytes at most (fewer at EOF), chunk by chunk: most texts are short.
// As in pread_all, a short read of a /proc file is its end (PID/cmdline hands out all it
// has up to the count asked), which spares the read that would return 0.
int read_prefix(int fd, std::size_t max, std::string& buf) {
  buf.clear();
  char chunk[8192];
  while (buf.size() < max) {
    const std::size_t want = std::min(sizeof chunk, max - buf.size());
    ssize_t n = ::read(fd, chunk, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      buf.clear();
      return err;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < want) break;
  }
  return 0;
}

int read_path(int root_fd, const char* path, std::string& buf, std::size_t max_bytes) {
  int fd = ::openat(root_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = max_bytes > 0 ? read_prefix(fd, max_bytes, buf) : pread_all(fd, buf);
  ::close(fd);
  return err;
}

}  // namespace

bool parse_pid_name(const char* name, pid_t& pid) {
  const char* end = name + std::strlen(name);
  auto [p, ec] = std::from_chars(name, end, pid);
  return ec == std::errc() && p == end && pid > 0;
}

bool parse_socket_link(std::string_view link, std::uint64_t& inode) {
  // readlink of a socket fd: "socket:[12345]" (net/socket.c sockfs_dname).
  constexpr std::string_view kPrefix = "socket:[";
  if (link.size() <= kPrefix.size() + 1 || link.substr(0, kPrefix.size()) != kPrefix ||
      link.back() != ']') {
    return false;
  }
  const char* b = link.data() + kPrefix.size();
  const char* e = link.data() + link.size() - 1;
  auto [p, ec] = std::from_chars(b, e, inode);
  return ec == std::errc() && p == e;
}

DIR* open_dir_at(int dirfd, const char* relative, int& err) {
  const int fd = ::openat(dirfd, relative, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return nullptr;
  }
  DIR* dir = ::fdopendir(fd);
  if (!dir) {
    err = errno;
    ::close(fd);
  }
  return dir;
}

ReadResult read_result_from_errno(int err) {
  switch (err) {
    case 0:
      return ReadResult::Ok;
    case ENOENT:
    case ESRCH:
    case ENOTDIR:
      return ReadResult::Gone;
    case EACCES:
    case EPERM:
      return ReadResult::Denied;
    default:
      return ReadResult::Failed;
  }
}

ProcessHandle::ProcessHandle(int root_fd, pid_t pid, FdBudget* budget)
    : root_fd_(root_fd), pid_(pid), budget_(budget) {
  for (int& fd : fds_) fd = -1;
}

ProcessHandle::~ProcessHandle() { close_all(); }

void ProcessHandle::close(File file) {
  if (fds_[file] < 0) return;
  ::close(fds_[file]);
  if (budget_) budget_->give();
  fds_[file] = -1;
}

void ProcessHandle::close_all() {
  for (int f = 0; f < kFileCount; ++f) close(static_cast<File>(f));
}

ReadResult ProcessHandle::open_kept(File file, int& fd) {
  char path[48];
  std::snprintf(path, sizeof path, "%d/%s", static_cast<int>(pid_), kNames[file]);
  const int flags = file == kFdDir ? (O_PATH | O_DIRECTORY | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC);
  int f = ::openat(root_fd_, path, flags);
  if (f < 0) return read_result_from_errno(errno);
  if (budget_ && budget_->take()) {
    fds_[file] = f;
  }
  fd = f;
  return ReadResult::Ok;
}

ReadResult ProcessHandle::read(File file, std::string& buf) {
  int fd = fds_[file];
  const bool kept = fd >= 0;
  if (!kept) {
    if (auto r = open_kept(file, fd); r != ReadResult::Ok) return r;
  }
  int err = pread_all(fd, buf);
  if (fds_[file] != fd) ::close(fd);  // over budget: not kept
  return read_result_from_errno(err);
}

ReadResult ProcessHandle::read_small(File file, char* buf, std::size_t cap, std::size_t& len) {
  len = 0;
  int fd = fds_[file];
  if (fd < 0) {
    if (auto r = open_kept(file, fd); r != ReadResult::Ok) return r;
  }
  ssize_t n;
  do {
    n = ::pread(fd, buf, cap, 0);
  } while (n < 0 && errno == EINTR);
  const int err = n < 0 ? errno : 0;
  if (fds_[file] != fd) ::close(fd);  // over budget: not kept
  if (n < 0) return read_result_from_errno(err);
  if (static_cast<std::size_t>(n) >= cap) return ReadResult::Failed;  // maybe cut
  len = static_cast<std::size_t>(n);
  return ReadResult::Ok;
}

ReadResult ProcessHandle::read_other(const char* relative, std::string& buf,
                                     std::size_t max_bytes) {
  char path[96];
  std::snprintf(path, sizeof path, "%d/%s", static_cast<int>(pid_), relative);
  return read_result_from_errno(read_path(root_fd_, path, buf, max_bytes));
}

ReadResult ProcessHandle::readlink(const char* relative, std::string& out) {
  char path[96];
  std::snprintf(path, sizeof path, "%d/%s", static_cast<int>(pid_), relative);
  char target[4096];
  ssize_t n = ::readlinkat(root_fd_, path, target, sizeof target);
  if (n < 0) return read_result_from_errno(errno);
  out.assign(target, static_cast<size_t>(n));
  return ReadResult::Ok;
}

ReadResult ProcessHandle::open_fd_count(bool trust_st_size, std::uint64_t& count, bool* by_size) {
  count = 0;
  if (by_size) *by_size = false;
  if (trust_st_size) {
    int fd = fds_[kFdDir];
    if (fd < 0) {
      if (auto r = open_kept(kFdDir, fd); r != ReadResult::Ok) return r;
    }
    struct stat st {};
    // Linux >= 6.2 (commit f1f1f2569901, "fs/proc: add size to fd directory") reports the
    // number of open fds as the size of /proc/PID/fd: one syscall instead of a listing.
    int rc = ::fstat(fd, &st);
    int err = rc == 0 ? 0 : errno;
    if (fds_[kFdDir] != fd) ::close(fd);
    if (rc != 0) return read_result_from_errno(err);
    if (st.st_size > 0) {
      count = static_cast<std::uint64_t>(st.st_size);
      if (by_size) *by_size = true;
      return ReadResult::Ok;
    }
  }
  std::uint64_t n = 0;
  auto r = list_fd_dir(nullptr, &n);
  count = n;
  return r;
}

ReadResult ProcessHandle::list_fd_dir(void (*fn)(void*, int, const std::string&), void* arg) {
  char path[48];
  std::snprintf(path, sizeof path, "%d/fd", static_cast<int>(pid_));
  int err = 0;
  DIR* dir = open_dir_at(root_fd_, path, err);
  if (!dir) return read_result_from_errno(err);
  const int dfd = ::dirfd(dir);
  std::string target;
  char link[4096];
  std::uint64_t count = 0;
  // errno is reset before each readdir(): its end leaves errno alone, and a readlinkat() or
  // the callback may have set it.
  for (;;) {
    errno = 0;
    struct dirent* e = ::readdir(dir);
    if (!e) break;
    int num = 0;
    const char* name = e->d_name;
    const char* end = name;
    while (*end) ++end;
    auto [p, ec] = std::from_chars(name, end, num);
    if (ec != std::errc() || p != end) continue;  // "." and ".."
    ++count;
    if (fn) {
      ssize_t n = ::readlinkat(dfd, name, link, sizeof link);
      if (n < 0) continue;  // closed meanwhile
      target.assign(link, static_cast<size_t>(n));
      fn(arg, num, target);
    }
  }
  err = errno;
  ::closedir(dir);
  if (!fn) *static_cast<std::uint64_t*>(arg) = count;
  return read_result_from_errno(err);
}

ReadResult ProcessHandle::list_tasks(std::string& names_buf) {
  names_buf.clear();
  char path[48];
  std::snprintf(path, sizeof path, "%d/task", static_cast<int>(pid_));
  int err = 0;
  DIR* dir = open_dir_at(root_fd_, path, err);
  if (!dir) return read_result_from_errno(err);
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    names_buf += e->d_name;
    names_buf += ' ';
  }
  ::closedir(dir);
  return ReadResult::Ok;
}

}  // namespace loadwatch
