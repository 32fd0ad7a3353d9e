#pragma once
// Phases from a CSV of (concurrency, throughput[, latency, errors]), as a step-load script writes
// it with awk: one line per step, with or without a header, separated by commas, semicolons,
// tabs or spaces. docs/capacity.md lists the column names and units it understands.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/phase_stats.h"

namespace loadwatch::analysis {

/// Bad input; the message names the line (and column).
struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CsvOptions {
  /// Column names for a file without a header (the same names a header may use). Empty: a
  /// header if the first line has one, else kHeaderlessColumns.
  std::vector<std::string> columns;
};

/// A headerless file's columns: concurrency, requests/s, latency in ms and success rate in %
/// (the order of `print connections,qps,avg_latency,rate` in the usual wrk-and-awk script).
inline const std::vector<std::string> kHeaderlessColumns = {"users", "rps", "latency_ms",
                                                            "success_pct"};

inline constexpr std::size_t kCsvMaxRows = 10000;

/// `latency_column`, when given, receives the name of the column read as p95 (empty if none), so
/// a report can say that an average latency stands in for it.
std::vector<PhaseStats> read_capacity_csv(std::string_view text, const CsvOptions& options = {},
                                          std::string* latency_column = nullptr);

}  // namespace loadwatch::analysis
