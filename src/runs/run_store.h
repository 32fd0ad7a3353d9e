#pragma once
// Runs kept on disk, one JSON file per run in DIR/runs/, so they outlive the daemon.

#include <string>
#include <string_view>
#include <vector>

#include "runs/run.h"

namespace loadwatch {

/// A run file's text as the loader reads it: a bounded parse (depth, values, no key twice),
/// then the rules every run obeys (run_rules.h). Throws std::runtime_error saying why not.
Run parse_run_file(std::string_view text);

/// Files are written atomically (a temporary file, fsync, rename, fsync of the directory), so
/// a crash leaves the old or the new file, never half of one. Not thread-safe: RunBook
/// serialises the calls.
class RunStore {
 public:
  /// Largest run file read back; bigger ones are set aside like corrupt ones.
  static constexpr std::size_t kMaxFileBytes = 4u << 20;

  /// Uses DIR/runs, creating it if needed. Throws std::runtime_error naming the path and the
  /// cause when it cannot be created or written.
  explicit RunStore(const std::string& dir);

  struct Loaded {
    std::vector<Run> runs;
    /// One line per file that could not be used: "PATH: why; set aside as PATH.corrupt".
    std::vector<std::string> problems;
  };
  /// Reads every run file. A file that is truncated, corrupt or too large is renamed to
  /// NAME.corrupt (kept for a person to look at, never read again) and reported; the others
  /// are loaded. Leftover temporary files of an interrupted write are removed.
  Loaded load();

  /// Writes the run's file; throws std::runtime_error on failure (disk full, permissions).
  void save(const Run& run);
  /// Deletes the run's file (a run that fell out of the retained history).
  void remove(const std::string& id);

  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;  // DIR/runs
};

}  // namespace loadwatch
