#include "sources/source_runner.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "util/heap_trim.h"
#include "util/log.h"
#include "util/secret_file.h"
#include "util/thread_name.h"
#include "util/unix_time.h"

namespace loadwatch {

bool read_credentials(const SourceAuth& auth, FetchOptions& options, std::string& error) {
  options.username = auth.username;
  options.password.clear();
  options.bearer_token.clear();
  if (!auth.password_file.empty() &&
      !read_secret_file(auth.password_file, options.password, error)) {
    error = "basic_auth password_file: " + error;
    return false;
  }
  if (!auth.bearer_token_file.empty()) {
    if (!read_secret_file(auth.bearer_token_file, options.bearer_token, error)) {
      error = "bearer_token_file: " + error;
      return false;
    }
    if (options.bearer_token.empty()) {
      // "Authorization: Bearer " with nothing is never meant; likely a file being rewritten.
      error = "bearer_token_file: " + auth.bearer_token_file + " is empty";
      return false;
    }
  }
  return true;
}

void finish_scrape(std::vector<prometheus::MetricFamily>& families, const SourceConfig& config,
                   DropCounts& dropped) {
  GuardOptions options;
  options.fix_utf8 = false;
  GuardReport report;
  guard_families(families, nullptr, options, report);
  for (const auto& [key, n] : report.dropped) count_drop(dropped, key.second, n);
  count_drop(dropped, drop_reason::kMaxSeries, double(cap_series(families, config.max_series)));
}

SourceRunner::SourceRunner(SourceConfig config, std::unique_ptr<SourceScraper> scraper)
    : scraper_(std::move(scraper)),
      config_(std::move(config)),
      snapshot_(std::make_shared<SourceSnapshot>()) {
  thread_ = std::thread([this] {
    name_this_thread("lw-source");
    run();
  });
}

SourceRunner::~SourceRunner() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

void SourceRunner::request_stop() {
  {
    // Under the mutex so the thread cannot miss the notify between its check and its wait.
    std::lock_guard lock(mutex_);
    stop_.store(true);
  }
  changed_.notify_all();
}

void SourceRunner::set_config(const SourceConfig& config) {
  std::lock_guard lock(mutex_);
  config_ = config;
}

SourceConfig SourceRunner::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

std::shared_ptr<const SourceSnapshot> SourceRunner::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

bool SourceRunner::wait_for_scrapes(std::uint64_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return snapshot_->scrapes >= n; });
}

void SourceRunner::publish(std::shared_ptr<const SourceSnapshot> snap) {
  {
    std::lock_guard lock(mutex_);
    snapshot_ = std::move(snap);
  }
  changed_.notify_all();
}

void SourceRunner::run() {
  HttpFetcher http(&stop_);
  while (!stop_.load()) {
    SourceConfig cfg = config();
    auto started = std::chrono::steady_clock::now();

    ScrapeResult result;
    FetchOptions options;
    options.timeout = cfg.timeout;
    options.max_bytes = cfg.max_bytes;
    options.tls = cfg.tls;
    std::vector<FetchResult> answers;
    double arrived = 0;  // unix time the last answer was in
    bool stopped = false;
    // Secrets are read at each scrape, not at config load, as Prometheus does: a rotated
    // password or token (Vault agent, a mounted Kubernetes secret) counts at once without a
    // SIGHUP, a missing file marks only this source down, and no secret stays in memory
    // between scrapes.
    if (!read_credentials(cfg.auth, options, result.message)) {
      result.error = FetchError::Credentials;
    }
    for (const auto& req : scraper_->requests(cfg)) {
      if (result.error != FetchError::None) break;
      options.accept = req.accept;
      // The timeout bounds the whole scrape, not each of its GETs.
      auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started);
      options.timeout = std::max(std::chrono::milliseconds(1), cfg.timeout - spent);
      FetchResult r = http.get(req.url, options);
      arrived = unix_now();
      r.arrived = arrived;
      r.steady = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
                     .count();
      if (r.error == FetchError::Stopped) {
        stopped = true;
        break;
      }
      if (!r.ok() && !req.optional) {
        result.error = r.error;
        result.message = req.url + ": " + r.message;
        break;
      }
      answers.push_back(std::move(r));
    }
    if (stopped) break;
    if (result.error == FetchError::None) {
      try {
        result = scraper_->process(cfg, answers);
      } catch (const std::exception& e) {
        // Kinds do not throw on any body; this keeps a bug there from ending the daemon.
        result = ScrapeResult{};
        result.error = FetchError::Parse;
        result.message = cfg.url + ": " + e.what();
      }
    }
    std::size_t body_bytes = 0;
    for (const auto& a : answers) body_bytes += a.body.capacity();
    answers.clear();
    note_heap_freed(body_bytes);
    if (result.error == FetchError::None && result.retry_in) {
      // Not a scrape yet: the kind asked for the same answers again, shortly.
      auto again = std::chrono::duration<double>(std::clamp(*result.retry_in, 0.01, 5.0));
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, again, [&] { return stop_.load(); });
      continue;
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    auto prev = snapshot();
    auto snap = std::make_shared<SourceSnapshot>();
    snap->scrapes = prev->scrapes + 1;
    snap->errors = prev->errors;
    snap->dropped_series = prev->dropped_series;
    snap->last_success = prev->last_success;
    snap->last_error_kind = prev->last_error_kind;
    snap->last_error = prev->last_error;
    snap->duration_seconds = seconds;
    if (result.error == FetchError::None) {
      finish_scrape(result.families, cfg, result.dropped);
      for (const auto& [reason, n] : result.dropped) {
        count_drop(snap->dropped_series, reason, n);
        if (warned_.insert(reason).second) {
          if (reason == drop_reason::kMaxSeries) {
            spdlog::warn("source {}: more than {} series, dropping {} (warned once)", cfg.name,
                         cfg.max_series, n);
          } else {
            spdlog::warn(
                "source {}: dropped {} series (reason {}; see docs/limits.md; warned "
                "once)",
                cfg.name, n, reason);
          }
        }
      }
      snap->up = true;
      snap->last_success = unix_now();
      snap->families = std::move(result.families);
      if (result.data_age_uncertainty) {
        snap->answer_arrived = result.data_time > 0 ? result.data_time : arrived;
        snap->data_age_uncertainty = result.data_age_uncertainty;
      }
      if (!prev->up && prev->scrapes > 0) spdlog::info("source {}: up again", cfg.name);
    } else {
      for (std::size_t i = 0; i < std::size(kFetchErrorReasons); ++i) {
        if (kFetchErrorReasons[i] == result.error) snap->errors[i] += 1;
      }
      snap->last_error_kind = result.error;
      snap->last_error = result.message;
      // Log transitions only: a source that stays down must not flood the log.
      if (prev->up || prev->scrapes == 0) {
        spdlog::warn("source {}: scrape failed ({}): {}", cfg.name,
                     fetch_error_reason(result.error), result.message);
      }
    }
    publish(std::move(snap));

    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, started + config_.interval, [&] { return stop_.load(); });
  }
}

}  // namespace loadwatch
