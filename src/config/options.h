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
  /// Handlers one client address may have queued or running; 0: a quarter of max_requests, at
  /// least 2.
  int max_requests_per_address = 0;
  int max_connections = 1200;
  int max_connections_per_address = 64;
  /// A keep-alive connection ends (Connection: close) after this many requests or this age.
  int max_requests_per_connection = 1000;
  std::chrono::milliseconds max_connection_age{5 * 60 * 1000};
  /// Points the in-memory history keeps per series (one per sample); 0 turns it off.
  std::size_t history_points = 7200;
  std::size_t history_max_series = 512;
  /// POST /api/v1/runs... allowed (reads are always on).
  bool enable_run_api = false;
  /// Pushes (JMeter's InfluxDB `events` annotations, the Locust listener's steps) may open,
  /// phase and close runs; off, a push never creates, phases or stops a run.
  bool push_run_annotations = false;
  /// A finished run younger than this is never deleted to make room (--runs.min-age).
  std::chrono::milliseconds runs_min_age{3600 * 1000};
  /// Directory for state that outlives the daemon (runs); empty = memory only.
  std::string storage_path;
  /// Bytes of /metrics (estimated text, before gzip) that pushes, textfiles and pull sources'
  /// families share: each collector gets a fair share, and past it its largest families are
  /// dropped (loadwatch_dropped_series_total{reason="page_bytes"}).
  std::size_t metrics_push_max_bytes = 32u << 20;
};

}  // namespace loadwatch
