#include "process/target_resolver.h"

#include <re2/re2.h>

#include <charconv>
#include <cstring>
#include <unordered_map>

#include "process/port_owner.h"
#include "procfs/cgroup_unit.h"
#include "util/bounded_file.h"
#include "util/log.h"

namespace loadwatch {

std::optional<pid_t> parse_pidfile(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  pid_t pid = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

std::string join_cmdline(std::string_view raw) {
  while (!raw.empty() && raw.back() == '\0') raw.remove_suffix(1);
  std::string out(raw);
  for (char& c : out) {
    if (c == '\0') c = ' ';
  }
  return out;
}

bool exe_matches(std::string_view link, std::string_view value) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (link.size() > kDeleted.size() && link.substr(link.size() - kDeleted.size()) == kDeleted) {
    link.remove_suffix(kDeleted.size());
  }
  if (value.find('/') != std::string_view::npos) return link == value;
  const auto slash = link.rfind('/');
  return (slash == std::string_view::npos ? link : link.substr(slash + 1)) == value;
}

namespace {

class PidResolver final : public TargetResolver {
 public:
  explicit PidResolver(pid_t pid) : pid_(pid) {}
  void resolve(ResolveContext&, std::vector<pid_t>& roots) override { roots.push_back(pid_); }

 private:
  pid_t pid_;
};

class PidfileResolver final : public TargetResolver {
 public:
  explicit PidfileResolver(std::string path) : path_(std::move(path)) {}
  void resolve(ResolveContext&, std::vector<pid_t>& roots) override {
    // Re-read every sample (one small file): a restarted service rewrites it.
    // Bounded and checked on the open fd: a pidfile swapped for a FIFO or a link to
    // /dev/zero must not stall the sampler.
    std::string problem;
    if (read_bounded_file(path_, kMaxPidfileBytes, buf_, &problem) == 0) {
      if (auto pid = parse_pidfile(buf_)) {
        roots.push_back(*pid);
      } else {
        problem = path_ + ": no PID in it";
      }
    }
    // A missing or garbled pidfile is a target that is down, not an error: say it once.
    if (problem != last_problem_ && !problem.empty()) {
      spdlog::debug("pidfile {}; target down", problem);
    }
    last_problem_ = std::move(problem);
  }

 private:
  std::string path_;
  std::string buf_;
  std::string last_problem_;
};

class UnitResolver final : public TargetResolver {
 public:
  explicit UnitResolver(const std::string& unit) : cgroup_(unit) {}
  void resolve(ResolveContext& ctx, std::vector<pid_t>& roots) override {
    cgroup_.pids(ctx.sys, roots);
  }

 private:
  UnitCgroup cgroup_;
};

class PortResolver final : public TargetResolver {
 public:
  explicit PortResolver(std::uint16_t port) : owner_(port) {}
  void resolve(ResolveContext& ctx, std::vector<pid_t>& roots) override {
    owner_.resolve(ctx.registry, roots, ctx.denied);
  }

 private:
  PortOwner owner_;
};

class CommResolver final : public TargetResolver {
 public:
  explicit CommResolver(std::string comm) : comm_(std::move(comm)) {}
  bool scans_processes() const override { return true; }
  void resolve(ResolveContext& ctx, std::vector<pid_t>& roots) override {
    for (const ProcessRecord* rec : ctx.registry.processes()) {
      if (rec->stat.comm == comm_) roots.push_back(rec->pid());
    }
  }

 private:
  std::string comm_;
};

// exe: and cmdline: need a read per process to decide. The answer is cached per process
// and re-checked when the process exec()s (its comm or exec signature changes, see
// PidStat::exec_signature) and, with back-off, at 1, 2, 4 ... kMaxRecheck samples of age:
// a process may rewrite its own command line after start (nginx, postgres, node's
// process.title), which no cheap signal reveals.
class MatchCacheResolver : public TargetResolver {
 public:
  bool scans_processes() const override { return true; }
  void resolve(ResolveContext& ctx, std::vector<pid_t>& roots) override {
    const std::uint32_t gen = ctx.registry.generation();
    for (ProcessRecord* rec : ctx.registry.processes()) {
      Entry& e = cache_[rec->pid()];
      const std::uint64_t sig = rec->stat.exec_signature();
      const bool same_process = e.checked_gen != 0 && e.starttime == rec->stat.starttime &&
                                e.exec_sig == sig && e.comm == rec->stat.comm;
      if (!same_process) {
        e = Entry{};
        e.starttime = rec->stat.starttime;
        e.exec_sig = sig;
        e.comm = rec->stat.comm;
      }
      if (!same_process || gen - e.checked_gen >= e.interval) {
        ReadResult r = check(*rec, e.match);
        if (r == ReadResult::Denied) {
          ++ctx.denied;
          if (!e.denied_logged) {
            spdlog::debug("{}: permission denied on process {} ({}), cannot match it", describe(),
                          rec->pid(), rec->stat.comm);
            e.denied_logged = true;
          }
        }
        e.checked_gen = gen;
        e.interval = same_process ? std::min(e.interval * 2, kMaxRecheck) : 1;
      }
      e.seen_gen = gen;
      if (e.match) roots.push_back(rec->pid());
    }
    // Forget processes that are gone, now and then.
    if (cache_.size() > 2 * ctx.registry.processes().size() + 64) {
      for (auto it = cache_.begin(); it != cache_.end();) {
        it = it->second.seen_gen == gen ? std::next(it) : cache_.erase(it);
      }
    }
  }

  static constexpr std::uint32_t kMaxRecheck = 64;

 protected:
  /// Decides whether `rec` matches; leaves `match` false on anything but Ok.
  virtual ReadResult check(ProcessRecord& rec, bool& match) = 0;
  virtual std::string describe() const = 0;

 private:
  struct Entry {
    std::uint64_t starttime = 0;
    std::uint64_t exec_sig = 0;
    std::string comm;
    bool match = false;
    bool denied_logged = false;
    std::uint32_t checked_gen = 0;
    std::uint32_t seen_gen = 0;
    std::uint32_t interval = 1;
  };
  std::unordered_map<pid_t, Entry> cache_;
};

class ExeResolver final : public MatchCacheResolver {
 public:
  explicit ExeResolver(std::string value) : value_(std::move(value)) {}

 protected:
  ReadResult check(ProcessRecord& rec, bool& match) override {
    match = false;
    ReadResult r = rec.handle.readlink("exe", link_);
    if (r == ReadResult::Ok) match = exe_matches(link_, value_);
    return r;
  }
  std::string describe() const override { return "exe:" + value_; }

 private:
  std::string value_;
  std::string link_;
};

class CmdlineResolver final : public MatchCacheResolver {
 public:
  CmdlineResolver(std::string value, std::shared_ptr<const re2::RE2> regex)
      : value_(std::move(value)), regex_(std::move(regex)) {}

 protected:
  ReadResult check(ProcessRecord& rec, bool& match) override {
    match = false;
    ReadResult r = rec.handle.read_other("cmdline", buf_, kMaxCmdlineBytes);
    if (r != ReadResult::Ok) return r;
    // Kernel threads and zombies have an empty command line: never a match, even for a
    // regex that matches the empty string.
    if (buf_.empty()) return r;
    // An unanchored search, as std::regex_search was: RE2 is linear in the text.
    match = RE2::PartialMatch(join_cmdline(buf_), *regex_);
    return r;
  }
  std::string describe() const override { return "cmdline:" + value_; }

 private:
  std::string value_;
  std::shared_ptr<const re2::RE2> regex_;
  std::string buf_;
};

}  // namespace

std::unique_ptr<TargetResolver> make_target_resolver(const Selector& selector) {
  const std::string& v = selector.value;
  switch (selector.kind) {
    case Selector::Kind::Pid: {
      pid_t pid = 0;
      std::from_chars(v.data(), v.data() + v.size(), pid);
      return std::make_unique<PidResolver>(pid);
    }
    case Selector::Kind::Pidfile:
      return std::make_unique<PidfileResolver>(v);
    case Selector::Kind::Comm:
      return std::make_unique<CommResolver>(v);
    case Selector::Kind::Exe:
      return std::make_unique<ExeResolver>(v);
    case Selector::Kind::Cmdline: {
      auto re = selector.regex ? selector.regex : make_selector("cmdline", v).regex;
      return std::make_unique<CmdlineResolver>(v, std::move(re));
    }
    case Selector::Kind::Unit:
      return std::make_unique<UnitResolver>(v);
    case Selector::Kind::Port: {
      unsigned port = 0;
      std::from_chars(v.data(), v.data() + v.size(), port);
      return std::make_unique<PortResolver>(static_cast<std::uint16_t>(port));
    }
  }
  return std::make_unique<PidResolver>(0);
}

}  // namespace loadwatch
