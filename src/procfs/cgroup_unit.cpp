#include "procfs/cgroup_unit.h"

#include <dirent.h>
#include <sys/stat.h>

#include <charconv>
#include <deque>

#include "procfs/tokenizer.h"
#include "util/bounded_file.h"

namespace loadwatch {

namespace {

constexpr const char* kHierarchies[] = {"fs/cgroup", "fs/cgroup/unified", "fs/cgroup/systemd",
                                        "fs/cgroup/pids"};
constexpr std::size_t kMaxSearchDirs = 4096;  // bound on the walk
constexpr int kMaxSearchDepth = 8;
constexpr std::size_t kMaxUnitDirs = 256;  // bound on a unit's own sub-cgroups

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Subdirectory names of `path` (cgroup directories are real directories, d_type works on
// cgroupfs; DT_UNKNOWN falls back to stat()).
std::vector<std::string> subdirs(const std::string& path) {
  std::vector<std::string> out;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return out;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_UNKNOWN) {
      struct stat st {};
      is_dir = ::stat((path + "/" + e->d_name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (is_dir) out.emplace_back(e->d_name);
  }
  ::closedir(dir);
  return out;
}

}  // namespace

void parse_cgroup_procs(std::string_view text, std::vector<pid_t>& out) {
  while (!text.empty()) {
    std::string_view line = host_parse::next_line(text);
    pid_t pid = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec == std::errc() && p == line.data() + line.size() && pid > 0) out.push_back(pid);
  }
}

std::string unit_name(std::string_view value) {
  static constexpr std::string_view kSuffixes[] = {
      ".service", ".scope", ".slice", ".socket", ".mount", ".swap", ".target", ".timer", ".path"};
  for (auto s : kSuffixes) {
    if (value.size() > s.size() && value.substr(value.size() - s.size()) == s) {
      return std::string(value);
    }
  }
  // systemctl's rule: a name without a unit type means a service.
  return std::string(value) + ".service";
}

std::optional<std::string> find_unit_cgroup(const FsRoot& sys, std::string_view unit) {
  const std::string name(unit);
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    return std::nullopt;
  }
  std::size_t visited = 0;
  for (const char* h : kHierarchies) {
    const std::string root = sys.path(h);
    // A mounted hierarchy has cgroup.procs at its top; on a v1 host fs/cgroup itself is a
    // tmpfs holding the hierarchies, and is skipped by this test.
    if (!exists(root + "/cgroup.procs")) continue;
    // The common case first: a system service.
    if (exists(root + "/system.slice/" + name + "/cgroup.procs")) {
      return std::string(h) + "/system.slice/" + name;
    }
    std::deque<std::pair<std::string, int>> queue{{"", 0}};
    while (!queue.empty() && visited < kMaxSearchDirs) {
      auto [rel, depth] = std::move(queue.front());
      queue.pop_front();
      ++visited;
      for (const std::string& sub : subdirs(rel.empty() ? root : root + "/" + rel)) {
        const std::string child = rel.empty() ? sub : rel + "/" + sub;
        if (sub == name) return std::string(h) + "/" + child;
        // Other hierarchies (cpu, memory, ...) mounted below a v2 root are not walked twice.
        if (depth + 1 < kMaxSearchDepth) queue.emplace_back(child, depth + 1);
      }
    }
  }
  return std::nullopt;
}

bool UnitCgroup::read_tree(const FsRoot& sys, std::vector<pid_t>& out) {
  const std::string top = sys.path(dir_);
  // Bounded, regular files only: --path.sysfs may point at a tree others can write to.
  if (read_bounded_file(top + "/cgroup.procs", kMaxCgroupProcsBytes, buf_) != 0) return false;
  parse_cgroup_procs(buf_, out);
  std::deque<std::string> queue{top};
  std::size_t seen = 0;
  while (!queue.empty() && seen < kMaxUnitDirs) {
    std::string dir = std::move(queue.front());
    queue.pop_front();
    for (const std::string& sub : subdirs(dir)) {
      if (++seen > kMaxUnitDirs) break;
      std::string child = dir + "/" + sub;
      if (read_bounded_file(child + "/cgroup.procs", kMaxCgroupProcsBytes, buf_) == 0) {
        parse_cgroup_procs(buf_, out);
      }
      queue.push_back(std::move(child));
    }
  }
  return true;
}

bool UnitCgroup::pids(const FsRoot& sys, std::vector<pid_t>& out) {
  if (!dir_.empty() && read_tree(sys, out)) return true;
  // Not found, or its directory vanished (systemd removes it when the unit stops; it is
  // usually re-created at the same place, which the read above catches).
  if (searched_ && ++calls_since_search_ < kResearchCalls) return false;
  searched_ = true;
  calls_since_search_ = 0;
  if (auto found = find_unit_cgroup(sys, unit_)) {
    dir_ = *found;
    return read_tree(sys, out);
  }
  return false;
}

}  // namespace loadwatch
