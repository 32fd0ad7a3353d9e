#include "report/report_service.h"

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "report/history_series_source.h"
#include "report/run_report.h"
#include "report/timeline.h"
#include "util/atomic_file.h"
#include "util/bounded_file.h"
#include "util/heap_trim.h"
#include "util/log.h"
#include "util/thread_name.h"
#include "util/unix_time.h"

namespace loadwatch::report {

namespace {

namespace fs = std::filesystem;

/// Larger saved files are not read. The largest timeline the daemon writes is a run as long
/// as the history (--history.points at most 1e6) at about 25 bytes a point per series.
constexpr std::size_t kMaxSavedReportBytes = 256u << 20;

/// Readable by all: `loadwatch report --file` is often run by another user than the daemon.
constexpr mode_t kReportFileMode = 0644;

/// A saved report or timeline, as the daemon wrote it; nullopt when there is none. Only a
/// regular file is read (a FIFO would hold the request forever), and no symlink.
std::optional<std::string> read_saved(const std::string& path) {
  std::string text, error;
  int err = read_bounded_file(path, kMaxSavedReportBytes, text, &error, Symlinks::Refuse);
  if (err == 0) return text;
  if (err != ENOENT) spdlog::warn("saved report not used: {}", error);
  return std::nullopt;
}

}  // namespace

ReportService::ReportService(const RunBook& book, const History* history, std::string storage_dir,
                             std::optional<std::string> generator_target)
    : book_(book),
      history_(history),
      storage_dir_(std::move(storage_dir)),
      generator_target_(std::move(generator_target)),
      started_at_(unix_now()) {}

ReportService::~ReportService() { stop(); }

std::string ReportService::reports_dir() const {
  return storage_dir_.empty() ? std::string() : storage_dir_ + "/reports";
}

void ReportService::start() {
  if (storage_dir_.empty() || !history_ || keeper_.joinable()) return;
  std::error_code ec;
  fs::create_directories(reports_dir(), ec);
  keeper_ = std::thread([this] {
    name_this_thread("lw-reports");
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      try {
        save_finished();
      } catch (const std::exception& e) {
        spdlog::warn("run reports: {}", e.what());
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::seconds(2), [this] { return stop_; });
    }
  });
}

void ReportService::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
}

std::optional<BuiltReport> ReportService::build(const Run& run) const {
  if (!history_ || run.phases.empty()) return std::nullopt;
  HistorySeriesSource source(*history_);
  RunSeriesOptions options{generator_target_};
  analysis::RunSeries series;
  // A run that just ended: its last counts may be in the samples still to come (at most
  // kLateSampleSeconds; this runs on a report builder thread, not an HTTP one).
  if (run.end) {
    double wait = *run.end + kLateSampleSeconds - unix_now();
    if (wait > 0) {
      std::this_thread::sleep_for(
          std::chrono::duration<double>(std::min(wait, kLateSampleSeconds)));
    }
  }
  auto report = report_for_run(run, source, unix_now(), options, &series);
  std::string json = analysis::render_report_json(report);
  return BuiltReport{std::move(json), timeline_json(series).dump(), std::move(report)};
}

std::optional<BuiltReport> ReportService::load_saved(const std::string& id) const {
  if (storage_dir_.empty()) return std::nullopt;
  auto report = read_saved(reports_dir() + "/" + id + ".json");
  if (!report) return std::nullopt;
  auto timeline = read_saved(reports_dir() + "/" + id + ".timeline.json");
  return BuiltReport{*report, timeline.value_or("{\"series\":[]}"), std::nullopt};
}

const analysis::CapacityReport& BuiltReport::parsed() {
  if (!report) report = analysis::report_from_json(report_json);
  return *report;
}

std::optional<BuiltReport> ReportService::report(const Run& run, std::string* why) const {
  if (!run.open()) {
    if (auto saved = load_saved(run.id)) return saved;
  }
  if (run.phases.empty()) {
    if (why) *why = "the run has no phases";
    return std::nullopt;
  }
  auto built = build(run);
  if (!built && why) *why = "the history is off and no report was saved for this run";
  return built;
}

std::size_t ReportService::save_finished() {
  if (storage_dir_.empty() || !history_) return 0;
  std::size_t written = 0;
  for (const Run& run : book_.list()) {
    // Runs that ended before this daemon started are not in its history.
    if (run.open() || run.phases.empty() || run.end.value_or(0) < started_at_) continue;
    fs::path file = fs::path(reports_dir()) / (run.id + ".json");
    std::error_code ec;
    if (fs::exists(file, ec)) continue;
    auto built = build(run);
    if (!built) continue;
    // The timeline first: a report file present means both were written.
    write_file_atomically(reports_dir(), run.id + ".timeline.json", built->timeline_json,
                          kReportFileMode);
    write_file_atomically(reports_dir(), run.id + ".json", built->report_json, kReportFileMode);
    ++written;
    spdlog::info("run {}: report saved to {}", run.id, file.string());
  }
  if (written > 0) trim_heap_soon();  // the builds' scratch: back to the kernel after a sample
  return written;
}

}  // namespace loadwatch::report
