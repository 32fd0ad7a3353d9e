#include "daemon.h"

#include <signal.h>
#include <systemd/sd-daemon.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <memory>

#include "flags.h"
#include "history/history.h"
#include "report/report_service.h"
#include "routes/answer_builder.h"
#include "routes/live_routes.h"
#include "routes/report_routes.h"
#include "routes/run_routes.h"
#include "routes/web_routes.h"
#include "runs/run_book.h"
#include "sampler/sampler.h"
#include "util/heap_trim.h"
#include "util/log.h"
#include "util/logging.h"
#include "version.h"
#include "web/http_server.h"
#include "web/web_config.h"

namespace loadwatch {

namespace {

/// Sends WATCHDOG=1 only while the sampler makes progress, so systemd restarts a stuck sampler.
/// "Progress" allows for the sample interval: with --sample.interval=2m and WatchdogSec=30s a
/// healthy sampler publishes a sample only every 2 minutes, so the sampler counts as stuck once
/// no sample was published for max(2 x interval, interval + 5 s); systemd then restarts the
/// service WatchdogSec later.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::milliseconds sample_interval)
      : stall_(std::max(2 * sample_interval, sample_interval + std::chrono::seconds(5))) {
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0) period_ = std::chrono::microseconds(usec);
  }
  /// How long the main loop may sleep before the next check (it also polls the web config).
  std::chrono::milliseconds tick() const {
    std::chrono::milliseconds second(1000);
    if (period_.count() == 0) return second;
    return std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(period_) / 4,
                      std::chrono::milliseconds(100), second);
  }
  void check(const Sampler& sampler) {
    if (period_.count() == 0) return;
    auto now = std::chrono::steady_clock::now();
    auto samples = sampler.samples();
    if (samples != last_samples_) {
      last_samples_ = samples;
      last_progress_ = now;
    }
    if (now - last_progress_ <= stall_) sd_notify(0, "WATCHDOG=1");
  }

 private:
  std::chrono::milliseconds stall_;
  std::chrono::microseconds period_{0};
  std::uint64_t last_samples_ = 0;
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
};

void reload(const Options& options, Sampler& sampler, HttpServer& http) {
  sd_notify(0, "RELOADING=1");
  try {
    sampler.reload(effective_config(options));
  } catch (const std::exception& e) {
    spdlog::error("config reload rejected, keeping the running config: {}", e.what());
  }
  http.reload_web_config(/*force=*/true);
  sd_notify(0, "READY=1");
}

int serve(const Options& options, Config config) {
  tune_heap();
  // Signals are taken synchronously by this thread; every thread started below inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGHUP, SIGTERM, SIGINT}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Before the server and the sampler, which both hold on to it.
  std::unique_ptr<RunBook> runs_ptr;
  try {
    std::unique_ptr<RunStore> store;
    if (!options.storage_path.empty()) store = std::make_unique<RunStore>(options.storage_path);
    RunBookLimits limits;
    limits.min_age_seconds = static_cast<double>(options.runs_min_age.count()) / 1000;
    limits.max_unseen_gap_seconds = sample_gap_seconds(options.sample_interval);  // it ticks
    runs_ptr = std::make_unique<RunBook>(std::move(store), limits);
  } catch (const std::exception& e) {
    spdlog::critical("--storage.path: {}", e.what());
    return 1;
  }
  RunBook& runs = *runs_ptr;

  HttpServerSettings http_settings;
  http_settings.listen_address = options.listen_address;
  http_settings.max_requests = options.max_requests;
  http_settings.max_requests_per_address = options.max_requests_per_address;
  http_settings.max_connections = options.max_connections;
  http_settings.max_connections_per_address = options.max_connections_per_address;
  http_settings.max_requests_per_connection = options.max_requests_per_connection;
  http_settings.max_connection_age_ms = static_cast<int>(std::min<std::chrono::milliseconds::rep>(
      options.max_connection_age.count(), std::numeric_limits<int>::max()));
  http_settings.web_config_file = options.web_config_file;
  AnswerBuilder answers;  // outlives the server, whose big-answer routes it runs
  HttpServer http(http_settings);
  std::unique_ptr<Sampler> sampler_ptr;
  try {
    // Collectors are built here; one that cannot start (e.g. its listen port is taken) is fatal.
    sampler_ptr = std::make_unique<Sampler>(options, std::move(config), &http, &runs);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  Sampler& sampler = *sampler_ptr;
  std::unique_ptr<History> history;
  if (options.history_points > 0) {
    history = std::make_unique<History>(
        HistorySettings{options.history_points, options.history_max_series});
    sampler.set_history(history.get());
  }
  add_web_routes(http, sampler);
  report::ReportService reports(runs, history.get(), options.storage_path);
  add_run_routes(http, runs, options.enable_run_api, answers,
                 report::report_subresource(reports, runs));
  add_live_routes(http, sampler, history.get(), answers);
  sampler.sample_once();  // /metrics has data from the first request on
  try {
    http.start();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  sampler.start();
  reports.start();
  spdlog::info("loadwatch {} listening on {} (port {}), sampling every {}ms", LOADWATCH_VERSION,
               options.listen_address, http.port(), options.sample_interval.count());
  sd_notify(0, "READY=1");

  Watchdog watchdog(options.sample_interval);
  for (;;) {
    auto tick = watchdog.tick();
    timespec timeout{static_cast<time_t>(tick.count() / 1000),
                     static_cast<long>((tick.count() % 1000) * 1'000'000)};
    int sig = sigtimedwait(&signals, nullptr, &timeout);
    watchdog.check(sampler);
    // The web config (and the certificates it names) take effect when they change, without
    // SIGHUP, as with exporter-toolkit which re-reads them per request.
    if (sig < 0) http.reload_web_config();
    if (sig == SIGHUP) {
      spdlog::info("SIGHUP: reloading {}",
                   options.config_file.empty() ? "flags" : options.config_file);
      reload(options, sampler, http);
    } else if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("{}: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      sd_notify(0, "STOPPING=1");
      break;
    }
  }
  http.stop();
  spdlog::debug("http server stopped");
  reports.stop();
  try {
    reports.save_finished();  // a run stopped just before this stop
  } catch (const std::exception& e) {
    spdlog::warn("run reports: {}", e.what());
  }
  runs.checkpoint();  // an open run is interrupted by this stop: record when
  if (!sampler.stop()) {
    // A sample is stuck in the kernel (a hung file); exiting is all that is left to do.
    spdlog::warn("sampler did not stop in time; exiting without waiting for it");
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  spdlog::debug("sampler stopped");
  return 0;
}

}  // namespace

int run_daemon(int argc, char** argv) {
  ParsedFlags flags = parse_flags(argc, argv);
  if (flags.message) {
    std::fputs(flags.message->c_str(), flags.exit_code == 0 ? stdout : stderr);
    return flags.exit_code;
  }
  if (flags.show_version) {
    std::printf("loadwatch, version %s (revision: %s, build date: %s)\n", LOADWATCH_VERSION,
                LOADWATCH_REVISION, LOADWATCH_BUILD_DATE);
    return 0;
  }
  const Options& options = flags.options;
  try {
    setup_logging(options.log_level, options.log_format);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  Config config;
  try {
    config = effective_config(options);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  if (options.config_check) {
    if (!options.web_config_file.empty()) {
      try {
        load_web_config(options.web_config_file);
      } catch (const ConfigError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
      }
    }
    std::printf("config OK: %zu targets, %zu sources\n", config.targets.size(),
                config.sources.size());
    return 0;
  }
  return serve(options, std::move(config));
}

}  // namespace loadwatch
