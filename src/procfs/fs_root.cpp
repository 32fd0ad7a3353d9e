#include "procfs/fs_root.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace loadwatch {

FsRoot::FsRoot(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string FsRoot::path(std::string_view relative) const {
  std::string p;
  p.reserve(root_.size() + 1 + relative.size());
  p += root_;
  if (!relative.empty() && relative.front() != '/') p += '/';
  p += relative;
  return p;
}

// By path, not by inspecting the mount: a procfs mounted elsewhere is taken to be another
// host's (a container's view of its host), which is what the user asked to read.
bool FsRoot::is_live_procfs() const { return root_ == "/proc"; }

int read_whole_file(const std::string& path, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd);
    return err;
  }
  ::close(fd);
  return 0;
}

int FsRoot::read(std::string_view relative, std::string& out) const {
  return read_whole_file(path(relative), out);
}

std::string FsRoot::read_or_throw(std::string_view relative) const {
  std::string out;
  if (int err = read(relative, out); err != 0) {
    throw std::runtime_error(path(relative) + ": " + std::strerror(err));
  }
  return out;
}

}  // namespace loadwatch
