#include "util/bounded_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace loadwatch {

namespace {

/// EISDIR for a directory, EINVAL for any other non-regular file, 0 for a regular one.
int kind_error(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return 0;
  return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
}

const char* kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

}  // namespace

BoundedFile::BoundedFile(const std::string& path, Symlinks symlinks) : symlinks_(symlinks) {
  // A look before opening, so a device node is not even opened (opening some has effects:
  // a watchdog, a tape). Not the check that counts: the file can change before open(), so
  // the open fd is checked again below.
  const int rc =
      symlinks == Symlinks::Refuse ? ::lstat(path.c_str(), &st_) : ::stat(path.c_str(), &st_);
  if (rc != 0) {
    error_ = errno;
    return;
  }
  if (symlinks == Symlinks::Refuse && S_ISLNK(st_.st_mode)) {
    error_ = ELOOP;
    return;
  }
  if ((error_ = kind_error(st_)) != 0) return;
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (symlinks == Symlinks::Refuse) flags |= O_NOFOLLOW;
  fd_ = ::open(path.c_str(), flags);
  if (fd_ < 0) {
    error_ = errno;
    return;
  }
  if (::fstat(fd_, &st_) != 0) {
    error_ = errno;
  } else {
    error_ = kind_error(st_);
  }
  if (error_ != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

BoundedFile::~BoundedFile() {
  if (fd_ >= 0) ::close(fd_);
}

int BoundedFile::read(std::size_t max_bytes, std::string& out) {
  out.clear();
  if (error_ != 0) return error_;
  // Until EOF: st_size is not trusted (cgroupfs and sysfs report 0 or 4096, and a file can
  // grow while it is read). One byte past the cap tells "larger" from "exactly the cap".
  char buf[16384];
  for (;;) {
    const std::size_t want = std::min(sizeof buf, max_bytes + 1 - out.size());
    ssize_t n = ::read(fd_, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      out.clear();
      return err;
    }
    if (n == 0) return 0;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      out.clear();
      return EFBIG;
    }
  }
}

std::string BoundedFile::describe(int err, std::size_t max_bytes) const {
  switch (err) {
    case 0:
      return "ok";
    case EISDIR:
    case EINVAL:
      return std::string("is ") + kind_name(st_.st_mode) + ", not a regular file";
    case ELOOP:
      if (symlinks_ == Symlinks::Refuse) return "is a symlink, which is not followed here";
      return std::strerror(err);
    case EFBIG:
      return "is larger than " + std::to_string(max_bytes) + " bytes";
    default:
      return std::strerror(err);
  }
}

int read_bounded_file(const std::string& path, std::size_t max_bytes, std::string& out,
                      std::string* error, Symlinks symlinks) {
  BoundedFile file(path, symlinks);
  int err = file.read(max_bytes, out);
  if (err != 0 && error) *error = path + ": " + file.describe(err, max_bytes);
  return err;
}

}  // namespace loadwatch
