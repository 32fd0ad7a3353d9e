#include "collectors/host_file.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "process/fd_budget.h"

namespace loadwatch {

namespace {

/// procfs and sysfs write a file's text when it is read from offset 0; a regular file
/// (a fixture tree) may be replaced by a rename under a kept fd.
bool kernel_generated(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  return fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC;
}

/// Reads until EOF (/proc files report st_size 0 or 4096, so the size is never trusted): from
/// offset 0 with pread when `from_start`, else from the fd's position. Returns 0 or errno.
int read_to_eof(int fd, bool from_start, std::string& out) {
  out.clear();
  char buf[16384];
  off_t off = 0;
  for (;;) {
    const ssize_t n = from_start ? ::pread(fd, buf, sizeof buf, off) : ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      off += n;
      continue;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    const int err = errno;
    out.clear();
    return err;
  }
}

}  // namespace

HostFile::HostFile(std::string relative, FdBudget* budget)
    : relative_(std::move(relative)), budget_(budget ? budget : &FdBudget::shared()) {}

HostFile::~HostFile() { close_kept(); }

HostFile::HostFile(HostFile&& other) noexcept
    : relative_(std::move(other.relative_)),
      budget_(other.budget_),
      fd_(std::exchange(other.fd_, -1)),
      root_(std::move(other.root_)),
      text_(std::move(other.text_)) {}

void HostFile::close_kept() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  budget_->give();
}

int HostFile::read(const FsRoot& root, std::string& out) {
  if (fd_ >= 0 && root_ != root.root()) close_kept();
  if (fd_ >= 0) {
    if (read_to_eof(fd_, true, out) == 0) return 0;
    close_kept();  // the file went away or fails: its path is opened once more, below
  }
  return read_by_path(root, out);
}

int HostFile::read_by_path(const FsRoot& root, std::string& out) {
  out.clear();
  const int fd = ::open(root.path(relative_).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int err = read_to_eof(fd, false, out);
  if (err == 0 && kernel_generated(fd) && budget_->take()) {
    fd_ = fd;
    root_ = root.root();
    return 0;
  }
  ::close(fd);
  return err;
}

void HostFile::read_or_throw(const FsRoot& root, std::string& out) {
  if (const int err = read(root, out); err != 0) {
    throw std::runtime_error(root.path(relative_) + ": " + std::strerror(err));
  }
}

}  // namespace loadwatch
