#include "process/process_tree.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace loadwatch {

namespace {

constexpr std::size_t kMaxMembers = 1 << 16;

void sort_unique(std::vector<pid_t>& v) {
  // Mostly in PID order already (a listing's): checked in one pass before sorting.
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

bool walk_with_files(ProcessRegistry& registry, std::vector<pid_t>& members) {
  std::unordered_set<pid_t> seen(members.begin(), members.end());
  std::vector<pid_t> frontier = members;
  std::vector<pid_t> kids;
  long reads = 0;
  while (!frontier.empty()) {
    pid_t pid = frontier.back();
    frontier.pop_back();
    ProcessRecord* rec = registry.stat(pid);
    if (!rec) continue;
    reads += std::max<long>(1, rec->stat.num_threads);
    if (reads > kMaxChildrenFileReads) return false;
    kids.clear();
    if (!registry.children_by_files(*rec, kids)) return false;
    for (pid_t k : kids) {
      if (seen.size() >= kMaxMembers) break;
      if (seen.insert(k).second) {
        members.push_back(k);
        frontier.push_back(k);
      }
    }
  }
  return true;
}

void walk_with_listing(ProcessRegistry& registry, std::vector<pid_t>& members) {
  registry.refresh_listing(false);
  std::unordered_set<pid_t> seen(members.begin(), members.end());
  std::vector<pid_t> frontier = members;
  std::vector<pid_t> kids;
  while (!frontier.empty()) {
    pid_t pid = frontier.back();
    frontier.pop_back();
    kids.clear();
    registry.children_by_listing(pid, kids);
    for (pid_t k : kids) {
      if (seen.size() >= kMaxMembers) break;
      if (seen.insert(k).second) {
        members.push_back(k);
        frontier.push_back(k);
      }
    }
  }
}

}  // namespace

void add_descendants(ProcessRegistry& registry, std::vector<pid_t>& members,
                     DescendantCache* cache) {
  sort_unique(members);
  const std::optional<std::uint64_t> last_pid = registry.last_pid();
  if (cache && cache->valid && last_pid && *last_pid == cache->last_pid &&
      cache->roots == members &&
      std::all_of(cache->members.begin(), cache->members.end(), [&](pid_t pid) {
        const ProcessRecord* rec = registry.stat(pid);
        return rec && !rec->stat.exited();
      })) {
    members = cache->members;
    return;
  }
  std::vector<pid_t> roots;
  if (cache) roots = members;
  if (!members.empty()) {
    bool done = false;
    // When /proc is listed this sample anyway (comm/exe/cmdline targets), it is free.
    if (!registry.listed() && registry.children_files() != false) {
      std::vector<pid_t> tried = members;
      if (walk_with_files(registry, tried)) {
        members = std::move(tried);
        done = true;
      }
    }
    if (!done) walk_with_listing(registry, members);
    sort_unique(members);
  }
  if (cache) {
    cache->roots = std::move(roots);
    cache->members = members;
    cache->last_pid = last_pid.value_or(0);
    cache->valid = last_pid.has_value();
  }
}

}  // namespace loadwatch
