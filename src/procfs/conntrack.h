#pragma once
// The fill of netfilter's connection-tracking table, from sys/net/netfilter/nf_conntrack_count
// and nf_conntrack_max below procfs. The files exist only while nf_conntrack is loaded.

#include <optional>

#include "procfs/fs_root.h"

namespace loadwatch {

struct ConntrackFill {
  double entries = 0;  // nf_conntrack_count: entries in use
  double limit = 0;    // nf_conntrack_max: size limit of the table
};

/// Reads both files below `proc`; nullopt when either is missing (module not loaded). Throws
/// std::runtime_error, naming the file, when one is not a single unsigned number.
std::optional<ConntrackFill> read_conntrack(const FsRoot& proc);

}  // namespace loadwatch
