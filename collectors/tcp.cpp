#include "collectors/tcp.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

#include "collectors/host_file.h"
#include "collectors/tcp_ephemeral_use.h"
#include "collectors/tcp_listen_top.h"
#include "collectors/tcp_tally.h"
#include "process/socket_inode_owners.h"
#include "process/socket_owners.h"
#include "procfs/proc_net_tcp.h"
#include "procfs/sock_diag.h"
#include "procfs/sockstat.h"
#include "procfs/sysctl.h"
#include "util/log.h"

namespace loadwatch {

namespace {

/// Errors that mean "netlink sock_diag is not allowed here": seccomp or systemd
/// RestrictAddressFamilies= (EAFNOSUPPORT / EPERM), an LSM (EACCES), no sock_diag support
/// (EPROTONOSUPPORT).
bool refused(int err) {
  return err == EPERM || err == EACCES || err == EAFNOSUPPORT || err == EPROTONOSUPPORT;
}

using StateCounts = std::array<std::uint64_t, kTcpStateCount>;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

/// First pass over the sockets: host-wide counts, and a copy of each socket for the
/// per-port / per-target pass (which needs the watched ports, known only after it). With
/// `timewait`, TIME_WAIT sockets are only counted there (per destination) and their ports
/// kept in `tw_ports` (for the per-port counts): 4 bytes a socket instead of a record.
class Recorder final : public TcpSocketVisitor {
 public:
  using PortPairs = std::vector<std::pair<std::uint16_t, std::uint16_t>>;
  Recorder(StateCounts& host, std::uint64_t& fw2_minisocks, std::vector<TcpSocket>& keep,
           EphemeralUse* timewait, PortPairs* tw_ports)
      : host_(host), fw2_(fw2_minisocks), keep_(keep), timewait_(timewait), tw_ports_(tw_ports) {}
  void on_socket(const TcpSocket& s) override {
    if (s.state == 0 || s.state >= kTcpStateCount) return;
    ++host_[s.state];
    if (s.timewait_minisock && s.state == kTcpFinWait2) ++fw2_;
    if (timewait_ != nullptr && s.state == kTcpTimeWait) {
      timewait_->add(s);
      tw_ports_->emplace_back(s.sport, s.dport);
      return;
    }
    keep_.push_back(s);
  }

 private:
  StateCounts& host_;
  std::uint64_t& fw2_;
  std::vector<TcpSocket>& keep_;
  EphemeralUse* timewait_;
  PortPairs* tw_ports_;
};

/// Second netlink pass: TIME_WAIT sockets of the watched ports, straight into the tally.
class PortTally final : public TcpSocketVisitor {
 public:
  explicit PortTally(TcpTally& tally) : tally_(tally) {}
  void on_socket(const TcpSocket& s) override {
    // The kernel filtered already; checking again keeps the result right even without a
    // bytecode (more ports than a filter holds).
    if (tally_.watched(s.sport) || tally_.watched(s.dport)) tally_.add(s);
  }

 private:
  TcpTally& tally_;
};

/// The ephemeral-range TIME_WAIT dump: per-destination counts only, no records.
class TimewaitUse final : public TcpSocketVisitor {
 public:
  explicit TimewaitUse(EphemeralUse& use) : use_(use) {}
  void on_socket(const TcpSocket& s) override {
    // The kernel filtered on state and source port already; add() checks the range again.
    if (s.state == kTcpTimeWait) use_.add(s);
  }

 private:
  EphemeralUse& use_;
};

class TcpCollector final : public Collector {
 public:
  TcpCollector(const CollectorEnv& env, double walk_budget_ms) : walk_budget_ms_(walk_budget_ms) {
    reconfigure(env);
  }

  void reconfigure(const CollectorEnv& env) override {
    config_ports_ = env.config.tcp.ports;
    force_procfs_ = env.options.tcp_force_procfs;
    have_walk_ = false;  // the last walk watched other ports: walk at the next sample
    // The TIME_WAIT counts may be repeated while younger than kTimewaitMaxAgeMs.
    const auto interval = std::max<long long>(1, env.options.sample_interval.count());
    tw_max_skip_ = static_cast<int>(std::max<long long>(0, kTimewaitMaxAgeMs / interval - 1));
    tw_dumped_ = false;
  }

  void collect(SampleContext& ctx, MetricSink& out) override {
    bool netlink = use_netlink(ctx);
    const bool deferrable = config_ports_.empty();
    // The ephemeral TIME_WAIT counts are due for a refresh (see the header).
    const bool tw_due = walk_budget_ms_ <= 0 || !tw_dumped_ || tw_skip_ <= 0;
    if (!tw_due) --tw_skip_;
    bool walk_now = true;
    if (netlink && have_walk_ && walk_skip_ > 0 && deferrable && !tw_due && same_targets(ctx)) {
      --walk_skip_;
      walk_now = !refresh_between_walks(ctx);
      if (walk_now) netlink = use_netlink(ctx);  // refused meanwhile: /proc from now on
    }
    TimewaitCount tw = TimewaitCount::kNo;
    double walk_cost = 0;
    if (walk_now) {
      const double cpu0 = thread_cpu_ms();
      // Without tcp.ports a due refresh rides on the walk: one dump of every state touches
      // the established hash once, where a walk and a TIME_WAIT dump touch it twice.
      tw = walk(ctx, netlink, deferrable && tw_due);
      walk_cost = thread_cpu_ms() - cpu0;
      netlink = netlink && !netlink_refused_;
    }
    bool eph_known = eph_known_;
    // !tw_dumped_ here: the walk found another ephemeral range.
    if (tw == TimewaitCount::kNo && netlink && (tw_due || !tw_dumped_) && eph_known) {
      eph_known = dump_timewait_use();
    }
    tally_.merge_timewait(tw_use_);
    emit(ctx, out, eph_known, max_known_);
    if (!walk_now) return;
    if (netlink && !netlink_refused_) {
      schedule_walks(walk_cost, tw == TimewaitCount::kInWalk);
      have_walk_ = true;
      remember_targets(ctx);
    } else {
      have_walk_ = false;
    }
  }

  /// Deferral (see the header): keeps the average cost of the walks and the ephemeral
  /// TIME_WAIT refreshes within the budget.
  void schedule_walks(double cost, bool with_timewait) {
    // 20 % margin: the samples in between cost ~0.1 ms too, and the next walk may cost a
    // little more than this one. A separate TIME_WAIT dump's average comes off first.
    const double budget = 0.8 * walk_budget_ms_ - (with_timewait ? 0 : tw_avg_ms_);
    double skip = 0;
    if (config_ports_.empty() && walk_budget_ms_ > 0 && cost > budget) {
      skip = budget <= 0 ? kMaxSkippedSamples : std::ceil(cost / budget) - 1;
    }
    walk_skip_ = static_cast<int>(std::min<double>(skip, kMaxSkippedSamples));
    if (with_timewait) {
      // The walk refreshed the TIME_WAIT counts: the next refresh is the next walk, at most
      // kTimewaitMaxAgeMs later.
      walk_skip_ = std::min(walk_skip_, tw_max_skip_);
      tw_skip_ = walk_skip_;
      tw_avg_ms_ = 0;
    }
  }

  /// How a walk counted the ephemeral use of the TIME_WAIT sockets.
  enum class TimewaitCount {
    kNo,           // TIME_WAIT masked out of the dump
    kInWalk,       // the dump asked for every state; TIME_WAIT sockets counted, not kept
    kFromRecords,  // the /proc reader, or a dump without sockstat: the records hold them
  };

  TimewaitCount walk(SampleContext& ctx, bool netlink, bool with_timewait) {
    // Ephemeral range: when unreadable, the two ephemeral gauges are left out.
    eph_lo_ = 1;
    eph_hi_ = 0;
    eph_known_ = false;
    if (port_range_file_.read(ctx.proc, buf_) == 0) {
      std::tie(eph_lo_, eph_hi_) = parse_port_range(buf_);
      eph_hi_ = std::min<std::uint32_t>(eph_hi_, 65535);
      eph_known_ = true;
    }
    // Counts from another range are stale.
    if (tw_use_.lo() != eph_lo_ || tw_use_.hi() != eph_hi_) tw_dumped_ = false;

    host_.fill(0);
    fw2_minisocks_ = 0;
    records_.clear();
    tw_ports_.clear();
    TimewaitCount tw = TimewaitCount::kFromRecords;  // the first pass saw every socket
    max_known_ = true;
    if (netlink) {
      tw = read_netlink(ctx, with_timewait);
      if (netlink_refused_) {  // refused during this sample: start over from /proc
        host_.fill(0);
        fw2_minisocks_ = 0;
        records_.clear();
        read_procfs(ctx);
        max_known_ = false;
        tw = TimewaitCount::kFromRecords;
      }
    } else {
      read_procfs(ctx);
      max_known_ = false;
    }

    resolve_targets(ctx);
    std::vector<std::uint16_t> ports = config_ports_;
    for (const auto& t : ctx.targets)
      ports.insert(ports.end(), t.listen_ports.begin(), t.listen_ports.end());
    tally_.begin(ports, eph_lo_, eph_hi_);
    listen_top_.clear();
    for (const auto& s : records_) {
      tally_.add(s);  // TIME_WAIT: per port only
      listen_top_.add(s);
    }
    if (tw == TimewaitCount::kFromRecords) {
      // The same count the ephemeral TIME_WAIT dump makes, so both readers agree.
      tw_use_.reset(eph_lo_, eph_hi_);
      for (const auto& s : records_) {
        if (s.state == kTcpTimeWait) tw_use_.add(s);
      }
      tw_dumped_ = false;
      tw_avg_ms_ = 0;
    } else if (tw == TimewaitCount::kInWalk) {
      // Per-port TIME_WAIT counts from the walk's port pairs: no second dump.
      TcpSocket t;
      t.state = kTcpTimeWait;
      for (const auto& [sport, dport] : tw_ports_) {
        if (!tally_.watched(sport) && !tally_.watched(dport)) continue;
        t.sport = sport;
        t.dport = dport;
        tally_.add(t);
      }
    } else if (!tally_.ports().empty()) {
      dump_port_timewait();
    }
    if (tw == TimewaitCount::kInWalk) tw_dumped_ = true;
    return tw;
  }

  /// The ephemeral use of the TIME_WAIT sockets, when no walk brings it: a TIME_WAIT-only
  /// dump with a bytecode on the source port range, counted per destination (see the
  /// header); between refreshes the last counts stand. False when netlink was refused
  /// meanwhile (the ephemeral gauges are left out of this sample; /proc takes over).
  bool dump_timewait_use() {
    tw_use_.reset(eph_lo_, eph_hi_);
    tw_dumped_ = false;
    if (eph_lo_ > eph_hi_) return true;  // an empty range: nothing to count
    const std::uint16_t lo = static_cast<std::uint16_t>(eph_lo_);
    const std::uint16_t hi = static_cast<std::uint16_t>(eph_hi_);
    if (eph_bytecode_.empty() || eph_bytecode_range_ != std::pair{lo, hi}) {
      eph_bytecode_ = build_source_range_filter(lo, hi);
      eph_bytecode_range_ = {lo, hi};
    }
    const double cpu0 = thread_cpu_ms();
    TimewaitUse visit(tw_use_);
    if (int err = dump_all(tcp_state_bit(kTcpTimeWait), eph_bytecode_, visit); err != 0) {
      tw_use_.reset(eph_lo_, eph_hi_);
      if (refused(err)) {
        refuse(err);
        return false;
      }
      throw std::runtime_error(std::string("sock_diag ephemeral time-wait dump: ") +
                               std::strerror(err));
    }
    const double cost = thread_cpu_ms() - cpu0;
    tw_dumped_ = true;
    // Skip as many samples as keep this dump's average within the budget (20 % margin, as
    // for the walk), but never past the age cap; budget 0 dumps every sample.
    double skip = 0;
    const double budget = 0.8 * walk_budget_ms_;
    if (walk_budget_ms_ > 0 && cost > budget) skip = std::ceil(cost / budget) - 1;
    tw_skip_ = static_cast<int>(std::min<double>(skip, tw_max_skip_));
    tw_avg_ms_ = cost / (tw_skip_ + 1);
    return true;
  }

  /// A sample between two walks: TIME_WAIT from sockstat and the listeners (a LISTEN-only
  /// dump walks the small listening hash, not the established one: ~0.01 ms) are fresh;
  /// the other figures are those of the last walk. False when sockstat is unreadable.
  bool refresh_between_walks(SampleContext& ctx) {
    if (sockstat_file_.read(ctx.proc, buf_) != 0) return false;
    const SockstatTcp sockstat = parse_sockstat(buf_);
    listeners_.clear();
    struct Listeners final : TcpSocketVisitor {
      std::vector<TcpSocket>& out;
      explicit Listeners(std::vector<TcpSocket>& o) : out(o) {}
      void on_socket(const TcpSocket& s) override {
        if (s.state == kTcpListen) out.push_back(s);
      }
    } visit(listeners_);
    if (int err = dump_all(tcp_state_bit(kTcpListen), {}, visit); err != 0) {
      if (refused(err)) {
        refuse(err);
        return false;
      }
      throw std::runtime_error(std::string("sock_diag listener dump: ") + std::strerror(err));
    }
    host_[kTcpTimeWait] = sockstat.tw > fw2_minisocks_ ? sockstat.tw - fw2_minisocks_ : 0;
    host_[kTcpListen] = listeners_.size();
    tally_.reset_listeners();
    listen_top_.clear();
    for (const auto& l : listeners_) {
      tally_.add(l);
      listen_top_.add(l);
    }
    for (std::size_t i = 0; i < ctx.targets.size(); ++i) {
      const auto& inodes = target_inodes_[i];
      auto& ports = ctx.targets[i].listen_ports;
      ports.clear();
      target_counts_[i][kTcpListen] = 0;
      for (const auto& l : listeners_) {
        if (l.inode == 0 || !std::binary_search(inodes.begin(), inodes.end(), l.inode)) continue;
        ++target_counts_[i][kTcpListen];
        ports.push_back(l.sport);
      }
      std::sort(ports.begin(), ports.end());
      ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    }
    return true;
  }

  /// The targets (names and processes) the last walk resolved; another set forces a walk.
  bool same_targets(const SampleContext& ctx) const {
    if (ctx.targets.size() != walk_targets_.size()) return false;
    for (std::size_t i = 0; i < ctx.targets.size(); ++i) {
      if (ctx.targets[i].name != walk_targets_[i].first ||
          ctx.targets[i].pids != walk_targets_[i].second) {
        return false;
      }
    }
    return true;
  }

  void remember_targets(const SampleContext& ctx) {
    walk_targets_.clear();
    for (const auto& t : ctx.targets) walk_targets_.emplace_back(t.name, t.pids);
  }

 private:
  bool use_netlink(const SampleContext& ctx) {
    if (force_procfs_ || netlink_refused_) return false;
    if (!ctx.proc.is_live_procfs()) return false;
    if (!diag_) {
      int err = 0;
      diag_ = SockDiag::open(err);
      if (!diag_) {
        if (!refused(err))
          throw std::runtime_error(std::string("sock_diag: ") + std::strerror(err));
        refuse(err);
        return false;
      }
    }
    return true;
  }

  void refuse(int err) {
    netlink_refused_ = true;
    diag_.reset();
    spdlog::warn("tcp: netlink sock_diag refused ({}), reading /proc/net/tcp and tcp6 instead",
                 std::strerror(err));
  }

  /// With sockstat, TIME_WAIT sockets are left out of the dump (the sockstat count stands
  /// for them) or, `with_timewait`, only counted toward the ephemeral use (tw_use_).
  TimewaitCount read_netlink(SampleContext& ctx, bool with_timewait) {
    std::optional<SockstatTcp> sockstat;
    if (sockstat_file_.read(ctx.proc, buf_) == 0) sockstat = parse_sockstat(buf_);
    const bool mask = sockstat && !with_timewait;
    const std::uint32_t states =
        mask ? kAllTcpStates & ~tcp_state_bit(kTcpTimeWait) : kAllTcpStates;
    const bool count_tw = sockstat && with_timewait;
    if (count_tw) tw_use_.reset(eph_lo_, eph_hi_);
    Recorder rec(host_, fw2_minisocks_, records_, count_tw ? &tw_use_ : nullptr, &tw_ports_);
    if (int err = dump_all(states, {}, rec); err != 0) {
      if (refused(err)) {
        refuse(err);
        return TimewaitCount::kFromRecords;
      }
      throw std::runtime_error(std::string("sock_diag dump: ") + std::strerror(err));
    }
    if (!sockstat) return TimewaitCount::kFromRecords;
    // sockstat "tw" counts every time-wait mini socket; those in substate FIN_WAIT2 were in
    // the dump (the state mask tests the substate) and are counted as FIN_WAIT2 already.
    host_[kTcpTimeWait] = sockstat->tw > fw2_minisocks_ ? sockstat->tw - fw2_minisocks_ : 0;
    return count_tw ? TimewaitCount::kInWalk : TimewaitCount::kNo;
  }

  void read_procfs(SampleContext& ctx) {
    Recorder rec(host_, fw2_minisocks_, records_, nullptr, nullptr);
    if (int err = read_proc_net_tcp(ctx.proc, AF_INET, rec, buf_); err != 0) {
      throw std::runtime_error(ctx.proc.path("net/tcp") + ": " + std::strerror(err));
    }
    // tcp6 is absent when IPv6 is disabled.
    if (int err = read_proc_net_tcp(ctx.proc, AF_INET6, rec, buf_); err != 0 && err != ENOENT) {
      throw std::runtime_error(ctx.proc.path("net/tcp6") + ": " + std::strerror(err));
    }
  }

  void dump_port_timewait() {
    std::vector<std::uint16_t> ports;
    for (const auto& p : tally_.ports()) ports.push_back(p.port);
    if (ports != filter_ports_) {
      filter_ports_ = ports;
      bytecode_ =
          ports.size() <= kMaxFilterPorts ? build_port_filter(ports) : std::vector<std::uint8_t>{};
    }
    PortTally visit(tally_);
    if (int err = dump_all(tcp_state_bit(kTcpTimeWait), bytecode_, visit); err != 0) {
      throw std::runtime_error(std::string("sock_diag time-wait dump: ") + std::strerror(err));
    }
  }

  /// One dump of IPv4 and IPv6 together (one kernel walk, TCPDIAG_GETSOCK); a kernel without
  /// that request gets one SOCK_DIAG_BY_FAMILY dump per family from then on. Returns an errno.
  int dump_all(std::uint32_t states, std::span<const std::uint8_t> bytecode,
               TcpSocketVisitor& visitor) {
    if (!per_family_) {
      int err = diag_->dump(AF_UNSPEC, states, bytecode, visitor);
      if (err != EINVAL && err != EOPNOTSUPP && err != ENOENT) return err;
      // Nothing was reported before the request was rejected: safe to go on per family.
      per_family_ = true;
    }
    for (std::uint8_t family : {AF_INET, AF_INET6}) {
      int err = diag_->dump(family, states, bytecode, visitor);
      // No AF_INET6 handler when IPv6 is disabled (ipv6.disable=1): no IPv6 sockets.
      if (family == AF_INET6 && (err == ENOENT || err == EAFNOSUPPORT)) continue;
      if (err != 0) return err;
    }
    return 0;
  }

  /// Which recorded sockets each target's processes hold; fills listen_ports and per-target
  /// state counts.
  void resolve_targets(SampleContext& ctx) {
    target_counts_.assign(ctx.targets.size(), StateCounts{});
    target_inodes_.assign(ctx.targets.size(), {});
    if (ctx.targets.empty()) return;
    alive_.clear();
    for (const auto& s : records_) {
      if (s.inode != 0) alive_.push_back(s.inode);
    }
    std::sort(alive_.begin(), alive_.end());
    alive_.erase(std::unique(alive_.begin(), alive_.end()), alive_.end());
    std::vector<pid_t> pids;
    std::vector<std::pair<pid_t, long long>> fd_counts;
    std::vector<pid_t> quiet;
    for (const auto& t : ctx.targets) {
      pids.insert(pids.end(), t.pids.begin(), t.pids.end());
      quiet.insert(quiet.end(), t.quiet.begin(), t.quiet.end());
      for (std::size_t i = 0; i < t.pids.size() && i < t.fd_counts.size(); ++i) {
        if (t.fd_counts[i] >= 0) fd_counts.emplace_back(t.pids[i], t.fd_counts[i]);
      }
    }
    std::sort(fd_counts.begin(), fd_counts.end());
    std::sort(quiet.begin(), quiet.end());
    owners_.update(ctx.proc, pids, alive_, fd_counts, quiet);

    std::vector<std::uint64_t> inodes;
    for (std::size_t i = 0; i < ctx.targets.size(); ++i) {
      TargetState& t = ctx.targets[i];
      inodes.clear();
      for (pid_t pid : t.pids) owners_.tcp_inodes(pid, inodes);
      std::sort(inodes.begin(), inodes.end());
      inodes.erase(std::unique(inodes.begin(), inodes.end()), inodes.end());
      t.listen_ports.clear();
      if (inodes.empty()) continue;
      for (const auto& s : records_) {
        if (s.inode == 0 || !std::binary_search(inodes.begin(), inodes.end(), s.inode)) continue;
        ++target_counts_[i][s.state];
        if (s.state == kTcpListen) t.listen_ports.push_back(s.sport);
      }
      std::sort(t.listen_ports.begin(), t.listen_ports.end());
      t.listen_ports.erase(std::unique(t.listen_ports.begin(), t.listen_ports.end()),
                           t.listen_ports.end());
      target_inodes_[i] = inodes;
    }
  }

  void emit(const SampleContext& ctx, MetricSink& out, bool eph_known, bool max_known) {
    for (unsigned st = 1; st < kTcpStateCount; ++st) {
      out.gauge("loadwatch_tcp_connections",
                "TCP sockets by state, whole host, IPv4 and IPv6 (TIME_WAIT from procfs "
                "net/sockstat).",
                {{"state", std::string(tcp_state_name(st))}}, static_cast<double>(host_[st]));
    }
    for (const auto& p : tally_.ports()) {
      const std::string port = std::to_string(p.port);
      for (unsigned st = 1; st < kTcpStateCount; ++st) {
        const std::string state(tcp_state_name(st));
        out.gauge("loadwatch_tcp_port_connections",
                  "TCP sockets by state whose local or remote port is a watched port (tcp.ports "
                  "and the targets' listening ports).",
                  {{"port", port}, {"side", "local"}, {"state", state}},
                  static_cast<double>(p.local[st]));
        out.gauge("loadwatch_tcp_port_connections",
                  "TCP sockets by state whose local or remote port is a watched port (tcp.ports "
                  "and the targets' listening ports).",
                  {{"port", port}, {"side", "remote"}, {"state", state}},
                  static_cast<double>(p.remote[st]));
      }
      if (!p.listening) continue;
      out.gauge("loadwatch_tcp_listen_queue_length",
                "Connections waiting in the accept queue of the fullest listener on the port.",
                {{"port", port}}, p.queue_length);
      if (max_known && p.queue_max_known) {
        out.gauge("loadwatch_tcp_listen_queue_max",
                  "Accept-queue limit of that listener: min(listen() backlog, "
                  "net.core.somaxconn); it overflows past this.",
                  {{"port", port}}, p.queue_max);
      }
    }
    emit_listen_top(ctx, out, max_known);
    if (eph_known) {
      out.gauge("loadwatch_tcp_ephemeral_ports",
                "Ports in net.ipv4.ip_local_port_range (the ephemeral range).", {},
                tally_.ephemeral_ports());
      out.gauge("loadwatch_tcp_ephemeral_port_usage_ratio",
                "Max over remote ip:port of local sockets (TIME_WAIT included) using an "
                "ephemeral port toward it, divided by the range size. The TIME_WAIT part may be "
                "up to 10 s old.",
                {}, tally_.ephemeral_ratio());
    }
    for (std::size_t i = 0; i < ctx.targets.size(); ++i) {
      if (!ctx.targets[i].up) continue;  // a down target's gauges are absent, as in targets
      for (unsigned st = 1; st < kTcpStateCount; ++st) {
        out.gauge("loadwatch_process_tcp_connections",
                  "TCP sockets held by the target's processes (inode match on their fds).",
                  {{"target", ctx.targets[i].name}, {"state", std::string(tcp_state_name(st))}},
                  static_cast<double>(target_counts_[i][st]));
      }
    }
  }

  /// The host-wide fullest listeners, whatever port and process: an overflow on a port
  /// nobody watches still names its listener. Their owners are looked up by inode, only for
  /// these few sockets, and cached (socket_inode_owners.h).
  void emit_listen_top(const SampleContext& ctx, MetricSink& out, bool max_known) {
    const std::vector<TopListener>& top = listen_top_.top();
    top_inodes_.clear();
    for (const auto& l : top) top_inodes_.push_back(l.inode);
    listen_owners_.update(ctx.proc, top_inodes_);
    for (const auto& l : top) {
      Labels labels{{"port", std::to_string(l.port)}, {"owner", listen_owners_.comm(l.inode)}};
      out.gauge("loadwatch_tcp_listen_top_queue_length",
                "Connections waiting in the accept queue of one of the host's fullest "
                "listeners (at most 5, non-empty queues only, by length over limit), any port; "
                "owner is the owning process's comm.",
                labels, l.queue_length);
      if (max_known && l.queue_max_known) {
        out.gauge("loadwatch_tcp_listen_top_queue_max",
                  "Accept-queue limit of that listener: min(listen() backlog, "
                  "net.core.somaxconn).",
                  std::move(labels), l.queue_max);
      }
    }
  }

  // A walk at least every 15 samples: at 1 s samples, every scrape at Prometheus' default
  // 15 s interval sees figures from a walk since the previous scrape.
  static constexpr int kMaxSkippedSamples = 14;
  // TIME_WAIT lasts 60 s (TCP_TIMEWAIT_LEN): counts under 10 s old still show an exhaustion
  // building up in time for an alert.
  static constexpr long long kTimewaitMaxAgeMs = 10000;

  std::vector<std::uint16_t> config_ports_;
  bool force_procfs_ = false;
  double walk_budget_ms_ = kDefaultTcpWalkBudgetMs;
  // Deferral state: the last walk's figures stand in for the walk until walk_skip_ is 0.
  bool have_walk_ = false;
  int walk_skip_ = 0;
  bool eph_known_ = false;
  std::uint32_t eph_lo_ = 1, eph_hi_ = 0;  // the last walk's ephemeral range
  bool max_known_ = true;
  // Ephemeral use of the TIME_WAIT sockets, on its own cadence: the last dump's counts stand
  // until tw_skip_ is 0.
  EphemeralUse tw_use_;
  bool tw_dumped_ = false;  // tw_use_ is from a dump or a walk, not from /proc records
  int tw_skip_ = 0;
  int tw_max_skip_ = 9;
  double tw_avg_ms_ = 0;  // the last dump's cost spread over the samples that reuse it
  std::vector<std::uint8_t> eph_bytecode_;
  std::pair<std::uint16_t, std::uint16_t> eph_bytecode_range_{};
  std::vector<std::pair<std::string, std::vector<pid_t>>> walk_targets_;
  std::vector<std::vector<std::uint64_t>> target_inodes_;
  std::vector<TcpSocket> listeners_;
  bool netlink_refused_ = false;
  bool per_family_ = false;  // the kernel rejected the two-family TCPDIAG_GETSOCK dump
  std::unique_ptr<SockDiag> diag_;
  // Reused sample after sample, so a steady state allocates little.
  StateCounts host_{};
  std::uint64_t fw2_minisocks_ = 0;
  std::vector<TcpSocket> records_;
  Recorder::PortPairs tw_ports_;  // a walk's TIME_WAIT sockets, when it counted them
  std::vector<std::uint64_t> alive_;
  std::vector<StateCounts> target_counts_;
  TcpTally tally_;
  ListenTop listen_top_;
  SocketInodeOwners listen_owners_;
  std::vector<std::uint64_t> top_inodes_;
  SocketOwners owners_;
  std::vector<std::uint16_t> filter_ports_;
  std::vector<std::uint8_t> bytecode_;
  HostFile sockstat_file_{"net/sockstat"};
  HostFile port_range_file_{"sys/net/ipv4/ip_local_port_range"};
  std::string buf_;
};

}  // namespace

std::unique_ptr<Collector> make_tcp_collector(const CollectorEnv& env) {
  return std::make_unique<TcpCollector>(env, kDefaultTcpWalkBudgetMs);
}

std::unique_ptr<Collector> make_tcp_collector_with_budget(const CollectorEnv& env,
                                                          double walk_budget_ms) {
  return std::make_unique<TcpCollector>(env, walk_budget_ms);
}

}  // namespace loadwatch
