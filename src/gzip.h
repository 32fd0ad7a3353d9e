#pragma once
#include <string>
#include <string_view>

namespace loadwatch {

/// gzip-compresses `data` (zlib, gzip wrapper). Throws std::runtime_error on a zlib error.
std::string gzip_compress(std::string_view data, int level = 6);

/// True when an Accept-Encoding header value accepts gzip (and does not refuse it with q=0).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace loadwatch
