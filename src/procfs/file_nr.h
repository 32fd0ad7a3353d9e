#pragma once
// /proc/sys/fs/file-nr: file handles allocated and the system maximum.

#include <cstdint>
#include <string_view>

namespace loadwatch {

/// The three fields of fs.file-nr (Documentation/admin-guide/sysctl/fs.rst).
struct FileNr {
  std::uint64_t allocated = 0;  // file handles allocated
  std::uint64_t unused = 0;     // allocated but unused: always 0 since Linux 2.6
  std::uint64_t maximum = 0;    // fs.file-max
};

/// Parses file-nr text ("1184\t0\t9223372036854775807"). Throws std::runtime_error when a
/// field is missing or not an unsigned integer; fields after the third are ignored.
FileNr parse_file_nr(std::string_view text);

}  // namespace loadwatch
