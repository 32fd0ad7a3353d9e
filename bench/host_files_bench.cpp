// host_files_bench — what one read of each host file the collectors read every sample costs,
// by path (open, read until EOF, close: FsRoot::read) against a kept fd (HostFile: pread
// from offset 0 until EOF), on this machine's /proc.
//
//   host_files_bench [K]
//       K reads of each file each way (default 2000), in 5 alternating rounds; prints one line
//       per file (bytes, µs per read by path and kept, the ratio; the median round) and the
//       total of one read of each, which is what a sample reads.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/cpu_clock.h"
#include "collectors/host_file.h"
#include "procfs/fs_root.h"

using namespace loadwatch;

namespace {

// The files of stat, meminfo, vmstat, loadavg, softirqs, pressure, filefd, netstat, sockstat,
// netdev, sysctl, conntrack and tcp (sockstat is read by both sockstat and tcp).
constexpr const char* kFiles[] = {
    "stat",
    "meminfo",
    "vmstat",
    "loadavg",
    "softirqs",
    "pressure/cpu",
    "pressure/memory",
    "pressure/io",
    "sys/fs/file-nr",
    "net/netstat",
    "net/snmp",
    "net/sockstat",
    "net/sockstat6",
    "net/dev",
    "sys/net/core/somaxconn",
    "sys/net/ipv4/tcp_max_syn_backlog",
    "sys/net/ipv4/tcp_tw_reuse",
    "sys/net/ipv4/tcp_fin_timeout",
    "sys/net/ipv4/tcp_max_tw_buckets",
    "sys/fs/file-max",
    "sys/fs/nr_open",
    "sys/net/netfilter/nf_conntrack_count",
    "sys/net/netfilter/nf_conntrack_max",
    "sys/net/ipv4/ip_local_port_range",
};

double cpu_us() { return 1e6 * bench::thread_cpu_seconds(); }

}  // namespace

int main(int argc, char** argv) {
  const int k = std::max(5, std::min(1000000, argc > 1 ? std::atoi(argv[1]) : 2000));
  constexpr int kRounds = 5;
  const FsRoot proc("/proc");
  std::string text;
  double total_path = 0, total_kept = 0;
  std::printf("%-40s %6s %9s %9s %6s\n", "file", "bytes", "path_us", "kept_us", "ratio");
  for (const char* rel : kFiles) {
    HostFile file(rel);
    if (file.read(proc, text) != 0) {
      std::printf("%-40s unreadable\n", rel);
      continue;
    }
    std::vector<double> by_path, kept;
    for (int round = 0; round < kRounds; ++round) {
      double t0 = cpu_us();
      for (int i = 0; i < k / kRounds; ++i) proc.read(rel, text);
      by_path.push_back((cpu_us() - t0) / (k / kRounds));
      t0 = cpu_us();
      for (int i = 0; i < k / kRounds; ++i) file.read(proc, text);
      kept.push_back((cpu_us() - t0) / (k / kRounds));
    }
    std::sort(by_path.begin(), by_path.end());
    std::sort(kept.begin(), kept.end());
    const double p = by_path[kRounds / 2], c = kept[kRounds / 2];
    std::printf("%-40s %6zu %9.2f %9.2f %6.2f%s\n", rel, text.size(), p, c, c / p,
                file.kept() ? "" : " (not kept)");
    total_path += p;
    total_kept += c;
  }
  std::printf("%-40s %6s %9.2f %9.2f %6.2f\n", "one read of each", "", total_path, total_kept,
              total_kept / total_path);
  return 0;
}
