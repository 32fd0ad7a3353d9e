#pragma once
// The daemon's side of run reports: built from the history while it still holds the run, and
// saved to the storage directory once the run has ended, so the report outlives the history
// and restarts. A keeper thread saves each finished run's report shortly after it ends.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "analysis/capacity_report.h"
#include "history/history.h"
#include "runs/run_book.h"

namespace loadwatch::report {

/// A report with the series its HTML form charts.
struct BuiltReport {
  std::string report_json;    // render_report_json
  std::string timeline_json;  // timeline_json
  /// The report itself when it was built here; a saved one is read from its JSON on first use.
  std::optional<analysis::CapacityReport> report;

  /// The report: the one built here, else the saved JSON read (once).
  const analysis::CapacityReport& parsed();
};

class ReportService {
 public:
  /// `history` may be null (no history: only saved reports); `storage_dir` empty: none saved.
  ReportService(const RunBook& book, const History* history, std::string storage_dir,
                std::optional<std::string> generator_target = std::nullopt);
  ~ReportService();

  /// Starts the keeper thread (only with a storage dir and a history).
  void start();
  void stop();

  /// The saved report of a finished run, else one built from the history. nullopt when
  /// neither exists; `why` then says so.
  std::optional<BuiltReport> report(const Run& run, std::string* why) const;

  /// Saves the reports of finished runs that have none yet; returns how many were written.
  std::size_t save_finished();

  std::string reports_dir() const;

 private:
  std::optional<BuiltReport> build(const Run& run) const;
  std::optional<BuiltReport> load_saved(const std::string& id) const;

  const RunBook& book_;
  const History* history_;
  std::string storage_dir_;
  std::optional<std::string> generator_target_;
  double started_at_;
  std::thread keeper_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
};

}  // namespace loadwatch::report
