#include "process/cgroup_membership.h"

#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "procfs/cgroup_unit.h"
#include "procfs/cpu_limit.h"
#include "util/bounded_file.h"

namespace loadwatch {

namespace {

constexpr std::uint32_t kRetrySkipped = 8;    // a skipped long listing is read again then
constexpr std::uint32_t kForgetSamples = 64;  // listings unused that long are dropped

/// A path that names a cgroup below the mount: no way up, not removed ("... (deleted)").
bool plain_path(std::string_view path) {
  return path.find("..") == std::string_view::npos &&
         path.find(" (deleted)") == std::string_view::npos;
}

std::string listing_file(const std::string& root, bool v2, std::string_view path) {
  std::string file = root;
  if (!path.empty()) (file += '/') += path;
  file += v2 ? "/cgroup.threads" : "/tasks";
  return file;
}

bool read_tids(const FsRoot& sys, const std::string& file, std::string& buf,
               std::vector<pid_t>& tids) {
  tids.clear();
  if (read_bounded_file(sys.path(file), CgroupMembership::kMaxListingBytes, buf) != 0) {
    return false;
  }
  parse_cgroup_procs(buf, tids);
  std::sort(tids.begin(), tids.end());
  return true;
}

bool mounted(const FsRoot& sys, const char* root, long magic) {
  struct statfs fs {};
  return ::statfs(sys.path(root).c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == magic;
}

}  // namespace

CgroupMembership::CgroupMembership(const FsRoot& proc, const FsRoot& sys) : sys_(sys) {
  // The listings give TIDs in this pid namespace: `proc` must be its procfs.
  if (!proc.is_live_procfs()) return;
  char self[32];
  const ssize_t n = ::readlink(proc.path("self").c_str(), self, sizeof self - 1);
  if (n <= 0 || std::string_view(self, static_cast<std::size_t>(n)) != std::to_string(::getpid())) {
    return;
  }
  std::string text;
  if (proc.read("thread-self/cgroup", text) != 0) return;
  // The mount must show the cgroup this thread's text names (the cgroup namespace's view).
  std::vector<pid_t> tids;
  const pid_t me = ::gettid();
  for (const CpuCgroupLine& line : cpu_cgroup_lines(text)) {
    if (!plain_path(line.path)) continue;
    std::string& root = line.v2 ? v2_root_ : v1cpu_root_;
    if (!root.empty()) continue;
    auto find_root = [&](const auto& candidates, long magic) {
      for (const char* r : candidates) {
        if (!mounted(sys, r, magic)) continue;
        if (read_tids(sys, listing_file(r, line.v2, line.path), buf_, tids) &&
            std::binary_search(tids.begin(), tids.end(), me)) {
          root = r;
          return;
        }
      }
    };
    if (line.v2) {
      find_root(kCgroupV2Roots, CGROUP2_SUPER_MAGIC);
    } else {
      find_root(kCgroupV1CpuRoots, CGROUP_SUPER_MAGIC);
    }
  }
}

bool CgroupMembership::checkable(std::string_view text) const {
  const auto lines = cpu_cgroup_lines(text);
  if (lines.empty()) return false;
  return std::all_of(lines.begin(), lines.end(), [&](const CpuCgroupLine& l) {
    return !(l.v2 ? v2_root_ : v1cpu_root_).empty() && plain_path(l.path);
  });
}

void CgroupMembership::begin_sample() {
  ++gen_;
  if (gen_ % kForgetSamples != 0) return;
  std::erase_if(listings_, [&](const auto& kv) { return gen_ - kv.second.gen > kForgetSamples; });
}

const CgroupMembership::Listing* CgroupMembership::listing(const std::string& file,
                                                           std::size_t members) {
  auto it = listings_.find(file);
  if (it == listings_.end()) it = listings_.emplace(file, Listing{}).first;
  Listing& l = it->second;
  if (l.gen == gen_) return l.ok ? &l : nullptr;
  if (l.sized && l.size > kTidsPerMember * members && ++l.skipped < kRetrySkipped) return nullptr;
  l.gen = gen_;
  l.skipped = 0;
  l.ok = read_tids(sys_, file, buf_, l.tids);
  // A listing over the cap counts as the longest it could be, so it is skipped next time.
  l.size = l.ok ? l.tids.size() : kMaxListingBytes / 2;
  l.sized = true;
  return l.ok ? &l : nullptr;
}

bool CgroupMembership::listed(std::string_view text, pid_t pid, std::size_t members) {
  auto in = [pid](const Listing* l) {
    return std::binary_search(l->tids.begin(), l->tids.end(), pid);
  };
  // The last text's listings were all read this sample: listing() would give each again as it
  // is, with nothing read or counted.
  if (cached_gen_ == gen_ && text == cached_text_) {
    return std::all_of(cached_.begin(), cached_.end(), in);
  }
  cached_gen_ = 0;
  cached_.clear();
  for (const CpuCgroupLine& line : cpu_cgroup_lines(text)) {
    const std::string& root = line.v2 ? v2_root_ : v1cpu_root_;
    if (root.empty() || !plain_path(line.path)) return false;
    file_ = listing_file(root, line.v2, line.path);
    const Listing* l = listing(file_, members);
    if (!l || !in(l)) return false;
    cached_.push_back(l);
  }
  cached_text_.assign(text);
  cached_gen_ = gen_;
  return true;
}

}  // namespace loadwatch
