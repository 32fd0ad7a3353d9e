#include "util/secret_file.h"

#include <cerrno>

#include "util/bounded_file.h"

namespace loadwatch {

bool read_secret_file(const std::string& path, std::string& secret, std::string& error) {
  // A regular file only, checked on the open fd: a FIFO or a link to /dev/zero swapped in
  // must neither hang the source's scrape nor be read forever.
  BoundedFile file(path);
  if (int err = file.read(kMaxSecretBytes, secret); err != 0) {
    error = err == EFBIG ? path + " " + file.describe(err, kMaxSecretBytes)
                         : "cannot read " + path + ": " + file.describe(err);
    return false;
  }
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
    secret.clear();
    error = path + " has a line break or NUL byte inside";
    return false;
  }
  return true;
}

}  // namespace loadwatch
