#pragma once
// The fill of netfilter's connection-tracking table, from sys/net/netfilter/nf_conntrack_count
// and nf_conntrack_max below procfs. The files exist only while nf_conntrack is loaded.

#include <string_view>

#include "procfs/fs_root.h"

namespace loadwatch {

inline constexpr std::string_view kConntrackCountFile = "sys/net/netfilter/nf_conntrack_count";
inline constexpr std::string_view kConntrackMaxFile = "sys/net/netfilter/nf_conntrack_max";

struct ConntrackFill {
  double entries = 0;  // nf_conntrack_count: entries in use
  double limit = 0;    // nf_conntrack_max: size limit of the table
};

/// Parses the two files' texts, read below `proc`. Throws std::runtime_error, naming the file,
/// when one is not a single unsigned number.
ConntrackFill parse_conntrack(const FsRoot& proc, std::string_view count, std::string_view max);

}  // namespace loadwatch
