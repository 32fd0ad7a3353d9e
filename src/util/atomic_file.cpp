#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace loadwatch {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

/// Writes all of `data` to `fd`; false with errno set on failure.
bool write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

bool fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

void write_file_atomically(const std::string& dir, const std::string& name, const std::string& data,
                           mode_t mode) {
  std::string tmp = dir + "/." + name + ".tmp";
  std::string final_path = dir + "/" + name;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + errno_text(errno));
  if (!write_all(fd, data) || ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + tmp + ": " + errno_text(err));
  }
  ::close(fd);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + final_path + ": " + errno_text(err));
  }
  if (!fsync_dir(dir)) throw std::runtime_error("cannot fsync " + dir + ": " + errno_text(errno));
}

bool is_atomic_write_leftover(const std::string& name) {
  return name.size() > 4 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0;
}

}  // namespace loadwatch
