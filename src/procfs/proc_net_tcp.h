#pragma once
// The /proc/net/tcp and /proc/net/tcp6 reader: the fallback when netlink sock_diag is refused
// (seccomp, systemd RestrictAddressFamilies=, an LSM) or forced with --tcp.force-procfs.
// Format: proc(5) "/proc/net/tcp"; printed by get_tcp4_sock(), get_openreq4() and
// get_timewait4_sock() in net/ipv4/tcp_ipv4.c (tcp6: net/ipv6/tcp_ipv6.c).

#include <cstdint>
#include <string>
#include <string_view>

#include "procfs/fs_root.h"
#include "procfs/tcp_socket.h"

namespace loadwatch {

/// Parses whole lines of /proc/net/tcp (family AF_INET) or /proc/net/tcp6 (AF_INET6) and
/// calls `visitor` once per socket. The header line ("  sl  local_address ...") is skipped
/// wherever it appears. Throws std::runtime_error on a malformed line. The listener's
/// accept-queue limit is not in this file, so records have wqueue_known == false.
void parse_proc_net_tcp(std::string_view text, std::uint8_t family, TcpSocketVisitor& visitor);

/// Reads net/tcp (AF_INET) or net/tcp6 (AF_INET6) below `proc` in 64 KiB chunks (memory
/// stays bounded at 60,000 sockets) and parses it. `buf` is scratch space the caller keeps
/// between calls. Returns 0 or the errno of the read; throws on a malformed line.
int read_proc_net_tcp(const FsRoot& proc, std::uint8_t family, TcpSocketVisitor& visitor,
                      std::string& buf);

}  // namespace loadwatch
