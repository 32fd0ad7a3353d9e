#pragma once
// Reads a password or bearer token file (a source's password_file, bearer_token_file).

#include <cstddef>
#include <string>

namespace loadwatch {

/// A secret file is small; anything bigger is a wrong path (a log, /dev/zero), not a token.
inline constexpr std::size_t kMaxSecretBytes = 64 * 1024;

/// Reads `path` into `secret` with trailing line breaks stripped (editors and `echo` add
/// one). False when the file cannot be read, is not a regular file, is larger than
/// kMaxSecretBytes or has a line break or NUL byte inside (it would split or cut an HTTP
/// header); `error` then names the file and the cause, never the content. Thread-safe.
bool read_secret_file(const std::string& path, std::string& secret, std::string& error);

}  // namespace loadwatch
