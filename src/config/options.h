#pragma once
// Command-line flags (README "Usage"), before the config file is merged in.

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace loadwatch {

struct Options {
  std::string config_file;
  bool config_check = false;
  std::string listen_address = ":9797";
  std::string web_config_file;
  std::chrono::milliseconds sample_interval{1000};
  std::vector<std::string> targets;  // NAME=SELECTOR
  std::vector<std::string> sources;  // NAME=KIND,URL
  std::string procfs = "/proc";
  std::string sysfs = "/sys";
  std::string log_level = "info";
  std::string log_format = "logfmt";
  /// --collector.NAME / --no-collector.NAME, by collector name.
  std::map<std::string, bool> collectors;
  /// Read sockets from /proc/net/tcp{,6} even when netlink sock_diag works.
  bool tcp_force_procfs = false;
  std::string textfile_directory;
  std::string graphite_listen_address;
  int max_requests = 40;
  int max_connections = 1200;
  /// Points the in-memory history keeps per series (one per sample); 0 turns it off.
  std::size_t history_points = 7200;
  std::size_t history_max_series = 512;
  /// POST /api/v1/runs... allowed (reads are always on).
  bool enable_run_api = false;
  /// Directory for state that outlives the daemon (runs); empty = memory only.
  std::string storage_path;
  /// Bytes of /metrics (estimated text, before gzip) that pushes, textfiles and pull sources'
  /// families share: each collector gets a fair share, and past it its largest families are
  /// dropped (loadwatch_dropped_series_total{reason="page_bytes"}).
  std::size_t metrics_push_max_bytes = 32u << 20;
};

}  // namespace loadwatch
