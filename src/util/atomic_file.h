#pragma once
// Files the daemon keeps across restarts (runs, their reports): written whole or not at all.

#include <sys/types.h>

#include <string>

namespace loadwatch {

/// Writes DIR/NAME through DIR/.NAME.tmp: write, fsync, rename, fsync of DIR, so a crash leaves
/// the old file or the new one, never half of one; the file gets `mode` (before the umask).
/// Throws std::runtime_error naming the path and the cause (disk full, permissions).
void write_file_atomically(const std::string& dir, const std::string& name, const std::string& data,
                           mode_t mode);

/// True for the temporary file of a write that never reached its rename (".NAME.tmp").
bool is_atomic_write_leftover(const std::string& name);

}  // namespace loadwatch
