#pragma once
// Collector "tcp": TCP sockets by state for the whole host, per watched port (tcp.ports plus
// every port a target listens on), listener accept queues, the host's fullest listeners
// whatever their port (tcp_listen_top.h; owners by socket inode, socket_inode_owners.h),
// ephemeral-port usage, and per target (sockets owned by the target's fds). Reads netlink
// sock_diag; falls back to /proc/net/tcp{,6} when netlink is refused, with
// --tcp.force-procfs, or when --path.procfs is not /proc (a fixture tree or another host's
// procfs: netlink can only see this kernel).
//
// Cost design (60,000 TIME_WAIT sockets, kernel 6.18, see bench/README-network.md):
//  - the host-wide TIME_WAIT count comes from /proc/net/sockstat "tw" (exact, ~0 ms) minus
//    the time-wait mini sockets whose substate is FIN_WAIT2 (counted in the dump below), not
//    from walking the TIME_WAIT sockets (~20 ms of kernel time);
//  - one dump per family with every state but TIME_WAIT (kernel-side mask) gives every other
//    count, the listeners and the socket inodes;
//  - only when ports are watched, a second dump asks for TIME_WAIT alone with a bytecode port
//    filter, so the kernel copies just the TIME_WAIT sockets of those ports;
//  - ephemeral-port usage counts TIME_WAIT sockets toward every destination: a load
//    generator without keep-alive exhausts its ports toward the SUT with TIME_WAIT sockets,
//    the case the gauge exists for. Only counts per remote ip:port are kept, no records.
//    Counting them copies every client-side TIME_WAIT socket (~16 ms at 60,000), so the
//    refresh has its own cadence, with or without tcp.ports: skipped for as many samples as
//    keep its average cost within the budget, but never reused once 10 s old (9 samples at
//    1 s). TIME_WAIT lasts 60 s and an exhaustion builds up over tens of seconds, so a 10 s
//    lag still lets the alert fire in time. Each sample adds the last counts, destination
//    by destination, to the other states' counts of the last walk.
//    With tcp.ports (a walk every sample) the refresh is a TIME_WAIT-only dump with a
//    bytecode on the source port range (ip_local_port_range). Without, it rides on the
//    walk: one dump of every state, TIME_WAIT sockets counted (and their port pairs kept
//    for the watched ports) instead of copied into records. Every dump touches every socket
//    of the established hash (~9.5 ms at 60,000) whatever it copies, so the walk and a
//    separate TIME_WAIT dump would pay that twice: measured 2.34 ms per sample on average,
//    over the budget, against 1.68 ms riding on the walk.
// The /proc fallback reads every socket anyway and counts the TIME_WAIT ones the same way
// every sample, so both readers give the same numbers (with budget 0, at every sample).
//
// Deferred walks. Even with TIME_WAIT masked out, a dump walks the whole established hash
// and touches every socket in it to test its state: measured here, ~1 ms for the 262,144
// empty buckets and ~9 ms with 60,000 TIME_WAIT sockets in them (the fixed cost the
// "~0 ms" design fact missed). So when no tcp.ports are configured and a walk cost more than
// the budget (2 ms CPU less a 20 % margin, less a separate ephemeral TIME_WAIT dump's
// average cost), the next samples skip it (at most 14 in a row, 9 when it carried the
// TIME_WAIT refresh; as many as keep the average within the budget):
// they take TIME_WAIT from sockstat and the listeners and accept queues from a LISTEN-only
// dump (which walks only the listening hash, ~0.01 ms), and repeat the last walk's other
// figures (other states, the non-TIME_WAIT part of the ephemeral usage, per-target counts).
// A change in the targets' processes forces a walk. On a host with a few thousand sockets
// every sample walks (and dumps the ephemeral TIME_WAIT sockets).
// With tcp.ports configured every sample walks: the user asked for per-port figures, and
// their cost is the kernel floor's (two walks, like `ss` with a port filter). Ports that
// are watched only because a target listens on them follow the deferral (their TIME_WAIT
// dump is part of the walk).

#include <memory>

#include "collector.h"

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
