#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace loadwatch {

/// gzip-compresses `data` (zlib, gzip wrapper). Throws std::runtime_error on a zlib error.
std::string gzip_compress(std::string_view data, int level = 6);

/// Why gzip_decompress gave up.
enum class GunzipError {
  none,
  too_large,  // the inflated data would exceed `max_out`
  corrupt,    // not gzip, a bad checksum, truncated, or trailing garbage
};

struct GunzipResult {
  std::string data;  // the inflated bytes; complete only when error == none
  GunzipError error = GunzipError::none;
  std::string message;  // what went wrong, fit to show a client
};

/// Inflates a gzip body (RFC 1952; several concatenated members are one body, as with `gzip -c
/// a b` and Go's gzip.Reader). Never holds more than `max_out` + 1 inflated bytes, so a small
/// "gzip bomb" is refused without being inflated. Empty input is corrupt (no gzip header).
/// Only a zlib allocation failure throws (std::bad_alloc). Thread-safe.
GunzipResult gzip_decompress(std::string_view data, std::size_t max_out);

/// True when an Accept-Encoding header value accepts gzip (and does not refuse it with q=0).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace loadwatch
