#include "runs/run_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "runs/run_request.h"
#include "runs/run_rules.h"
#include "util/atomic_file.h"
#include "util/bounded_file.h"
#include "util/heap_trim.h"

namespace loadwatch {

namespace {

constexpr mode_t kRunFileMode = 0640;
// A stored run is {format, run: {labels: {}, phases: [{...}]}, last_seen}: depth 3. Its values:
// a dozen fields, a full label map and at most 5 per phase. Anything beyond is refused while
// parsing, so a hostile file costs its own size and no more.
constexpr int kStoredDepth = 4;
constexpr std::size_t kStoredValues = 32 + 2 * kMaxLabels + kMaxRunHosts + 6 * (kMaxRunPhases + 1);

std::string errno_text(int err) { return std::strerror(err); }

void make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0750) == 0 || errno == EEXIST) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return;
    throw std::runtime_error(path + ": not a directory");
  }
  throw std::runtime_error("cannot create " + path + ": " + errno_text(errno));
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Run parse_run_file(std::string_view text) {
  nlohmann::json stored;
  try {
    stored = parse_bounded_json(text, kStoredDepth, kStoredValues);
  } catch (const std::exception& e) {
    // A file past the value cap is most often one with too many phases: say what the cap is.
    throw std::runtime_error(std::string("not valid JSON (truncated or corrupt): ") + e.what() +
                             " (a run holds at most " + std::to_string(kMaxRunPhases) + " phases)");
  }
  return run_from_stored_json(stored);
}

RunStore::RunStore(const std::string& dir) : dir_(dir + "/runs") {
  if (dir.empty()) throw std::runtime_error("storage path is empty");
  make_dir(dir);
  make_dir(dir_);
  // Fail at start-up, not at the first run, when the directory is read-only.
  write_file_atomically(dir_, ".probe", "", kRunFileMode);
  ::unlink((dir_ + "/.probe").c_str());
}

RunStore::Loaded RunStore::load() {
  Loaded loaded;
  std::vector<std::string> names;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) throw std::runtime_error("cannot read " + dir_ + ": " + errno_text(errno));
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (is_atomic_write_leftover(name)) {
      ::unlink((dir_ + "/" + name).c_str());  // a write that never reached its rename
    } else if (name[0] != '.' && ends_with(name, ".json")) {
      names.push_back(name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string path = dir_ + "/" + name;
    std::string why;
    std::string text;
    // A link in the state directory is not followed: only files the daemon wrote are read.
    BoundedFile file(path, Symlinks::Refuse);
    if (int err = file.read(kMaxFileBytes, text); err != 0) {
      why = "cannot read: " + file.describe(err, kMaxFileBytes);
    } else {
      try {
        Run run = parse_run_file(text);
        if (run.id + ".json" != name) {
          why = "holds run \"" + run.id + "\", not the one its name says";
        } else {
          loaded.runs.push_back(std::move(run));
          continue;
        }
      } catch (const std::exception& e) {
        why = text.empty() ? "empty (truncated)" : e.what();
      }
    }
    note_heap_freed(text.size());
    std::string aside = path + ".corrupt";
    if (::rename(path.c_str(), aside.c_str()) == 0) {
      loaded.problems.push_back(path + ": " + why + "; set aside as " + aside);
    } else {
      loaded.problems.push_back(path + ": " + why + "; could not set it aside (" +
                                errno_text(errno) + "), skipped");
    }
  }
  return loaded;
}

void RunStore::save(const Run& run) {
  write_file_atomically(dir_, run.id + ".json", run_to_stored_json(run).dump(1) + "\n",
                        kRunFileMode);
}

void RunStore::remove(const std::string& id) {
  std::string path = dir_ + "/" + id + ".json";
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw std::runtime_error("cannot remove " + path + ": " + errno_text(errno));
  }
}

}  // namespace loadwatch
