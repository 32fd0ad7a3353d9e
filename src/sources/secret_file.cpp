#include "sources/secret_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loadwatch {

bool read_secret_file(const std::string& path, std::string& secret, std::string& error) {
  secret.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  // Read until EOF, one byte past the limit: st_size is 0 for pipes and /proc files.
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      ::close(fd);
      secret.clear();
      return false;
    }
    if (n == 0) break;
    secret.append(buf, static_cast<std::size_t>(n));
    if (secret.size() > kMaxSecretBytes) {
      ::close(fd);
      secret.clear();
      error = path + " is larger than " + std::to_string(kMaxSecretBytes) + " bytes";
      return false;
    }
  }
  ::close(fd);
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
    secret.clear();
    error = path + " has a line break or NUL byte inside";
    return false;
  }
  return true;
}

}  // namespace loadwatch
