#pragma once
// Reading a file that loadwatch does not own (config, web config, pidfile, secret, textfile,
// cgroup.procs): opened first, then checked on the open fd, then read up to a cap. A FIFO, a
// device, a directory or a symlink swapped in between a check and the read can neither block
// the caller nor make it read forever (docs/limits.md "Files, config and selectors").

#include <sys/stat.h>

#include <cstddef>
#include <string>

namespace loadwatch {

/// Caps on what is read from each kind of file (docs/limits.md).
inline constexpr std::size_t kMaxConfigFileBytes = 4u << 20;     // --config.file
inline constexpr std::size_t kMaxWebConfigFileBytes = 1u << 20;  // --web.config.file
inline constexpr std::size_t kMaxPidfileBytes = 4096;            // pidfile: selectors
inline constexpr std::size_t kMaxCgroupProcsBytes = 8u << 20;    // a unit's cgroup.procs
inline constexpr std::size_t kMaxPemFileBytes = 1u << 20;        // TLS certificates, keys, CAs

enum class Symlinks {
  Follow,  // config files: /etc/... is often a link into a ConfigMap or a package dir
  Refuse,  // files in a directory other users write to (textfiles): the last component must
           // not be a symlink, so one cannot be swapped for a link to /dev/zero
};

/// One file opened O_RDONLY | O_CLOEXEC | O_NONBLOCK (an open of a FIFO does not wait for a
/// writer) and accepted only when the open fd is a regular file. Not copyable; closes the fd.
class BoundedFile {
 public:
  explicit BoundedFile(const std::string& path, Symlinks symlinks = Symlinks::Follow);
  ~BoundedFile();
  BoundedFile(const BoundedFile&) = delete;
  BoundedFile& operator=(const BoundedFile&) = delete;

  /// 0 when open and regular; else an errno: that of open()/fstat() (ENOENT, EACCES; ELOOP
  /// for a refused symlink), EISDIR for a directory, EINVAL for another non-regular file.
  int error() const { return error_; }
  /// fstat() of the open fd (valid when error() is 0, or EISDIR/EINVAL).
  const struct stat& status() const { return st_; }

  /// Reads the whole file into `out`, at most `max_bytes` (one byte more is tried: st_size is
  /// not trusted). Returns 0, EFBIG when the file is larger, or the errno of read().
  int read(std::size_t max_bytes, std::string& out);

  /// Why the file cannot be used, for a log line or a config error: "is a FIFO, not a regular
  /// file", "larger than 4194304 bytes", strerror(). `err` is error() or read()'s result.
  std::string describe(int err, std::size_t max_bytes = 0) const;

 private:
  Symlinks symlinks_;
  int fd_ = -1;
  int error_ = 0;
  struct stat st_ {};
};

/// Opens, checks and reads `path` in one call. Returns 0 or an errno as above; on failure
/// `error` (if given) reads "PATH: why".
int read_bounded_file(const std::string& path, std::size_t max_bytes, std::string& out,
                      std::string* error = nullptr, Symlinks symlinks = Symlinks::Follow);

}  // namespace loadwatch
