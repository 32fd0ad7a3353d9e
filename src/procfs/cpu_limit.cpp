#include "procfs/cpu_limit.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "procfs/tokenizer.h"

namespace loadwatch {

namespace {

constexpr int kMaxCpus = 1 << 16;    // bound on a range in a cpu list
constexpr int kMaxCgroupDepth = 64;  // bound on the walk up to the root

/// Blanks and line ends off both sides (kernel files end in '\n').
std::string_view strip(std::string_view s) {
  while (!s.empty() && (host_parse::is_blank(s.front()) || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (host_parse::is_blank(s.back()) || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::optional<long long> to_int(std::string_view s) {
  s = strip(s);
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

void keep_min(std::optional<double>& best, std::optional<double> v) {
  if (v && (!best || *v < *best)) best = v;
}

void keep_min(std::optional<CgroupQuota>& best, std::optional<double> v, const std::string& dir) {
  if (v && (!best || *v < best->cores)) best = CgroupQuota{*v, dir};
}

/// `path` and each of its ancestors up to "" (the root), at most kMaxCgroupDepth.
template <typename F>
void walk_up(std::string path, F&& visit) {
  for (int depth = 0; depth < kMaxCgroupDepth; ++depth) {
    visit(path);
    if (path.empty()) return;
    auto slash = path.rfind('/');
    path = slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
}

bool has_cpu_controller(std::string_view controllers) {
  while (!controllers.empty()) {
    auto comma = controllers.find(',');
    if (controllers.substr(0, comma) == "cpu") return true;
    if (comma == std::string_view::npos) break;
    controllers.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::optional<int> count_cpu_list(std::string_view list) {
  list = strip(list);
  if (list.empty()) return std::nullopt;
  long long count = 0;
  while (!list.empty()) {
    auto comma = list.find(',');
    std::string_view part = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    auto dash = part.find('-');
    auto lo = to_int(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : to_int(part.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo >= kMaxCpus) return std::nullopt;
    count += *hi - *lo + 1;
    if (count > kMaxCpus) return std::nullopt;
  }
  return static_cast<int>(count);
}

std::optional<int> status_cpus_allowed(std::string_view text) {
  constexpr std::string_view kKey = "Cpus_allowed_list:";
  while (!text.empty()) {
    std::string_view line = host_parse::next_line(text);
    if (line.substr(0, kKey.size()) == kKey) return count_cpu_list(line.substr(kKey.size()));
  }
  return std::nullopt;
}

std::optional<double> parse_cpu_max(std::string_view text) {
  std::string_view quota = host_parse::next_field(text);
  auto period = to_int(host_parse::next_field(text));
  if (quota == "max" || !period || *period <= 0) return std::nullopt;
  auto q = to_int(quota);
  if (!q || *q <= 0) return std::nullopt;
  return static_cast<double>(*q) / static_cast<double>(*period);
}

std::optional<double> parse_cfs_quota(std::string_view quota_text, std::string_view period_text) {
  auto q = to_int(quota_text);
  auto period = to_int(period_text);
  if (!q || *q <= 0 || !period || *period <= 0) return std::nullopt;  // -1: no quota
  return static_cast<double>(*q) / static_cast<double>(*period);
}

std::optional<double> cgroup_cpu_quota(const FsRoot& proc, const FsRoot& sys, pid_t pid) {
  std::string text;
  if (proc.read(std::to_string(pid) + "/cgroup", text) != 0) return std::nullopt;
  return cgroup_text_cpu_quota(text, sys);
}

std::optional<double> cgroup_text_cpu_quota(std::string_view text, const FsRoot& sys) {
  auto q = cgroup_text_quota(text, sys);
  return q ? std::optional<double>(q->cores) : std::nullopt;
}

std::vector<CpuCgroupLine> cpu_cgroup_lines(std::string_view text) {
  std::vector<CpuCgroupLine> out;
  while (!text.empty()) {
    // "HIERARCHY-ID:CONTROLLERS:PATH"; v2 is "0::PATH".
    std::string_view line = host_parse::next_line(text);
    auto c1 = line.find(':');
    auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string_view path = line.substr(c2 + 1);
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    if (line.substr(0, c1) == "0" && controllers.empty()) {
      out.push_back(CpuCgroupLine{true, path});
    } else if (has_cpu_controller(controllers)) {
      out.push_back(CpuCgroupLine{false, path});
    }
  }
  return out;
}

std::optional<CgroupQuota> cgroup_text_quota(std::string_view text, const FsRoot& sys) {
  std::optional<CgroupQuota> best;
  std::string a, b;
  for (const CpuCgroupLine& line : cpu_cgroup_lines(text)) {
    std::string path(line.path);
    if (path.find("..") != std::string::npos) continue;  // never leave the hierarchy
    if (line.v2) {
      for (const char* root : kCgroupV2Roots) {
        walk_up(path, [&](const std::string& dir) {
          std::string base = std::string(root) + (dir.empty() ? "" : "/" + dir);
          if (sys.read(base + "/cpu.max", a) == 0) keep_min(best, parse_cpu_max(a), base);
        });
      }
    } else {
      for (const char* root : kCgroupV1CpuRoots) {
        walk_up(path, [&](const std::string& dir) {
          std::string base = std::string(root) + (dir.empty() ? "" : "/" + dir);
          if (sys.read(base + "/cpu.cfs_quota_us", a) == 0 &&
              sys.read(base + "/cpu.cfs_period_us", b) == 0) {
            keep_min(best, parse_cfs_quota(a, b), base);
          }
        });
      }
    }
  }
  return best;
}

std::optional<double> process_cpu_limit(const FsRoot& proc, const FsRoot& sys, pid_t pid,
                                        CgroupQuotaCache* cache, std::string* cgroup_text) {
  std::string text;
  const bool read = proc.read(std::to_string(pid) + "/cgroup", text) == 0;
  if (cgroup_text && read) *cgroup_text = text;
  return process_cpu_limit_of_text(proc, sys, pid, read ? &text : nullptr, cache);
}

std::optional<double> process_cpu_limit_of_text(const FsRoot& proc, const FsRoot& sys, pid_t pid,
                                                const std::string* cgroup_text,
                                                CgroupQuotaCache* cache) {
  std::optional<double> best;
  // The syscall on the live kernel: /proc/PID/status costs as much as all a member's other
  // reads, and this runs for every member. A fixture tree or another host's /proc: the file.
  cpu_set_t set;
  if (proc.is_live_procfs()) {
    if (::sched_getaffinity(pid, sizeof set, &set) == 0) best = CPU_COUNT(&set);
  } else if (std::string status; proc.read(std::to_string(pid) + "/status", status) == 0) {
    if (auto n = status_cpus_allowed(status)) best = static_cast<double>(*n);
  }
  if (!cgroup_text) return best;
  if (!cache) {
    keep_min(best, cgroup_text_cpu_quota(*cgroup_text, sys));
    return best;
  }
  auto it = cache->find(*cgroup_text);
  if (it == cache->end()) {
    it = cache->emplace(*cgroup_text, cgroup_text_cpu_quota(*cgroup_text, sys)).first;
  }
  keep_min(best, it->second);
  return best;
}

}  // namespace loadwatch
