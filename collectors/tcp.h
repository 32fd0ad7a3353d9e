#pragma once
// Collector "tcp": TCP sockets by state for the whole host, per watched port (tcp.ports plus
// every port a target listens on), listener accept queues, the host's fullest listeners
// whatever their port (tcp_listen_top.h; owners by socket inode, socket_inode_owners.h),
// ephemeral-port usage, and per target (sockets owned by the target's fds). Reads netlink
// sock_diag; falls back to /proc/net/tcp{,6} when netlink is refused, with
// --tcp.force-procfs, or when --path.procfs is not /proc (a fixture tree or another host's
// procfs: netlink can only see this kernel).
//
// Why it is built as it is: a walk of every socket costs ~10 ms at 60,000 TIME_WAIT sockets, so
// TIME_WAIT comes from /proc/net/sockstat, the walk masks it out kernel-side, and walks (and the
// ephemeral-port TIME_WAIT refresh) are deferred to keep their average within a CPU budget, at
// most 10 s old. The design, its measurements and the freshness of each figure: docs/tcp.md.

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Builds the "tcp" collector. Reads env.config.tcp.ports and env.options.tcp_force_procfs
/// (again on reconfigure). Writes TargetState::listen_ports of ctx.targets, so it must run
/// after the targets collector. Owned by the sampler thread (not thread-safe).
std::unique_ptr<Collector> make_tcp_collector(const CollectorEnv& env);

/// Average CPU per sample the established-hash walk and the ephemeral TIME_WAIT dump may
/// cost together before samples skip them.
inline constexpr double kDefaultTcpWalkBudgetMs = 2.0;

/// As above with another budget; 0 walks and dumps every sample (tests that need every
/// sample fresh).
std::unique_ptr<Collector> make_tcp_collector_with_budget(const CollectorEnv& env,
                                                          double walk_budget_ms);

}  // namespace loadwatch
