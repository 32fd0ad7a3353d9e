#include "sampler/sampler.h"

#include <algorithm>

#include "history/history.h"
#include "metrics/series_guard.h"
#include "runs/run_book.h"
#include "util/heap_trim.h"
#include "util/log.h"
#include "util/thread_name.h"
#include "util/unix_time.h"
#include "version.h"

namespace loadwatch {

namespace {
const char* reason_text(const std::string& reason) {
  namespace r = drop_reason;
  if (reason == r::kReserved) return "its name is a family loadwatch exports";
  if (reason == r::kDuplicate) return "the same series came twice";
  if (reason == r::kNameCollision) return "its name is another family's _count, _sum or _bucket";
  if (reason == r::kTypeConflict) return "the family exists with another type";
  if (reason == r::kInvalidLabel) return "an invalid, reserved or repeated label name";
  if (reason == r::kInvalidName) return "an invalid metric name";
  if (reason == r::kLabelLimit) return "a label name or value too long, or too many labels";
  if (reason == r::kTotalSeries) return "the page holds its maximum of series";
  if (reason == r::kPageBytes) return "its source is past its share of --metrics.push-max-bytes";
  return "a cap was reached";
}

/// The collectors whose families come from outside and share the page's byte budget.
bool is_push_collector(std::string_view name) {
  return name == "influx" || name == "graphite" || name == "locustpush" || name == "textfile" ||
         name == "sources";
}
}  // namespace

double sample_gap_seconds(std::chrono::milliseconds interval) {
  return std::max(5.0, 3 * std::chrono::duration<double>(interval).count());
}

bool collector_enabled(const CollectorSpec& spec, const Options& options, const Config& config) {
  if (auto it = options.collectors.find(spec.name); it != options.collectors.end()) {
    return it->second;
  }
  if (auto it = config.collectors.find(spec.name); it != config.collectors.end()) {
    return it->second;
  }
  return spec.enabled_by_default;
}

Sampler::Sampler(const Options& options, Config config, HttpServer* http, RunBook* runs)
    : options_(options),
      config_(std::move(config)),
      proc_(options.procfs),
      sys_(options.sysfs),
      http_(http),
      runs_(runs),
      clocks_(sample_gap_seconds(options.sample_interval)) {
  CollectorEnv env{options_, config_, proc_, sys_, http_, runs_, runs_};
  for (const auto& spec : collector_table()) {
    if (!collector_enabled(spec, options_, config_)) continue;
    collectors_.push_back(Entry{&spec, spec.make(env)});
  }
}

Sampler::~Sampler() { stop(); }

std::vector<std::string> Sampler::collector_names() const {
  std::vector<std::string> names;
  for (const auto& e : collectors_) names.emplace_back(e.spec->name);
  return names;
}

void Sampler::reload(Config config) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(config);
  }
  wake_.notify_all();
}

void Sampler::apply_pending_config() {
  std::optional<Config> next;
  {
    std::lock_guard lock(mutex_);
    next.swap(pending_);
  }
  if (!next) return;
  for (const auto& spec : collector_table()) {
    if (collector_enabled(spec, options_, *next) != collector_enabled(spec, options_, config_)) {
      spdlog::warn("collector {} switched in the config: collector switches apply on restart",
                   spec.name);
    }
  }
  config_ = std::move(*next);
  CollectorEnv env{options_, config_, proc_, sys_, nullptr, runs_, runs_};
  for (auto& e : collectors_) e.collector->reconfigure(env);
  spdlog::info("config reloaded: {} targets, {} sources", config_.targets.size(),
               config_.sources.size());
}

void Sampler::sample_once() {
  apply_pending_config();
  SampleContext ctx{proc_, sys_, unix_now(), {}};
  ctx.monotonic = monotonic_seconds();
  MetricSink out;
  out.gauge("loadwatch_build_info",
            "A metric with a constant 1 labelled by the version and git revision of loadwatch.",
            {{"version", LOADWATCH_VERSION}, {"revision", LOADWATCH_REVISION}}, 1);
  struct Outcome {
    const char* name;
    double seconds;
    bool ok;
  };
  std::vector<Outcome> outcomes;
  for (std::size_t c = 0; c < collectors_.size(); ++c) {
    auto& e = collectors_[c];
    out.set_origin(static_cast<std::uint16_t>(c + 1));
    auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    try {
      e.collector->collect(ctx, out);
    } catch (const std::exception& ex) {
      ok = false;
      spdlog::debug("collector {} failed: {}", e.spec->name, ex.what());
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    outcomes.push_back({e.spec->name, secs, ok});
  }
  out.set_origin(0);
  for (const auto& o : outcomes) {
    out.gauge("loadwatch_collector_duration_seconds", "Time the collector took in the last sample.",
              {{"collector", o.name}}, o.seconds);
    out.gauge("loadwatch_collector_success",
              "1 if the collector succeeded in the last sample, 0 if it failed.",
              {{"collector", o.name}}, o.ok ? 1 : 0);
  }
  out.gauge("loadwatch_last_sample_timestamp_seconds",
            "Unix time of the sample being served; its age shows a stuck sampler.", {}, ctx.now);
  log_clock_event(clocks_.look(ctx.now, ctx.monotonic));
  out.counter("loadwatch_sample_gaps_total",
              "Spans between two samples of more than 3 intervals (at least 5 s): loadwatch or "
              "its host was stopped or stalled (SIGSTOP, a VM paused), and saw nothing then.",
              {}, static_cast<double>(clocks_.gaps()));
  out.counter("loadwatch_sample_gap_seconds_total",
              "Seconds in the spans that loadwatch_sample_gaps_total counts.", {},
              clocks_.gap_seconds());
  out.counter("loadwatch_clock_steps_total",
              "Times the wall clock moved over 1 s apart from the monotonic clock between two "
              "samples (set by hand or NTP, or again after a VM resumed): unix timestamps on "
              "either side of one are that far off.",
              {}, static_cast<double>(clocks_.steps()));
  // Totals up to the previous sample: added before the guard runs, so a textfile or source
  // cannot define these families too.
  for (const auto& [key, n] : dropped_) {
    out.counter("loadwatch_dropped_series_total",
                "Series not put on /metrics, by the collector that produced them and reason, "
                "counted at each sample (see docs/limits.md).",
                {{"collector", key.first}, {"reason", key.second}}, n);
  }
  for (const auto& [collector, n] : invalid_utf8_) {
    out.counter("loadwatch_invalid_utf8_total",
                "HELP texts and label values with invalid UTF-8, written with U+FFFD instead, "
                "counted at each sample.",
                {{"collector", collector}}, n);
  }
  SeriesOrigins origins;
  auto families = out.take(origins);
  GuardReport report;
  GuardOptions guard;
  guard.budget_bytes = options_.metrics_push_max_bytes;
  for (std::size_t c = 0; c < collectors_.size(); ++c) {
    if (is_push_collector(collectors_[c].spec->name)) {
      guard.budgeted.push_back(static_cast<std::uint16_t>(c + 1));
    }
  }
  guard_families(families, &origins, guard, report);
  account(report, out);
  auto snap = std::make_shared<const Snapshot>(std::move(families), std::move(ctx.targets), ctx.now,
                                               std::move(ctx.sources));
  std::shared_ptr<const Snapshot> previous;
  {
    std::lock_guard lock(mutex_);
    previous = latest_;
  }
  // Serializing here, not in the first scrape after publishing, keeps that cost off scrapers.
  if (previous) snap->prepare_like(*previous);
  {
    std::lock_guard lock(mutex_);
    latest_ = snap;
  }
  // After publishing: a history reader holding its lock can delay the history, not /metrics.
  if (history_) history_->record(snap->families(), ctx.now);
  snap.reset();
  samples_.fetch_add(1);
  previous.reset();
  trim_heap_if_due();  // after a burst of big inputs, off every request path
}

std::string Sampler::origin_name(std::uint16_t origin) const {
  if (origin >= 1 && origin <= collectors_.size()) return collectors_[origin - 1].spec->name;
  return "loadwatch";
}

void Sampler::account(const GuardReport& report, const MetricSink& sink) {
  auto log_once = [&](const std::string& collector, const std::string& reason,
                      const std::string& family, double n) {
    if (logged_.size() > 1000) return;  // bounded; the counters keep counting
    if (!logged_.insert(collector + "\x1f" + reason + "\x1f" + family).second) return;
    spdlog::warn("collector {}: dropped {} series of family {}: {} (reason {}; logged once)",
                 collector, n, family.empty() ? "?" : family, reason_text(reason), reason);
  };
  for (const auto& [key, n] : report.dropped) {
    std::string collector = origin_name(key.first);
    dropped_[{collector, key.second}] += n;
    auto ex = report.example.find(key);
    log_once(collector, key.second, ex == report.example.end() ? "" : ex->second, n);
  }
  for (const auto& [key, n] : sink.notes()) {
    std::string collector = origin_name(key.first);
    dropped_[{collector, key.second}] += n;
  }
  for (const auto& [origin, n] : report.invalid_utf8) {
    std::string collector = origin_name(origin);
    invalid_utf8_[collector] += n;
    if (logged_.size() <= 1000 && logged_.insert(collector + "\x1futf8").second) {
      spdlog::warn(
          "collector {}: {} HELP text(s) or label value(s) with invalid UTF-8, written "
          "with U+FFFD (logged once)",
          collector, n);
    }
  }
}

void Sampler::log_clock_event(const ClockWatch::Look& look) {
  if (look.gap == 0 && look.wall_step == 0) return;
  // Each kind once a minute at most: the counters count every one.
  double now = monotonic_seconds();
  if (look.gap > 0 && now - gap_logged_at_ >= 60) {
    gap_logged_at_ = now;
    spdlog::warn(
        "no sample for {:.1f} s: loadwatch or its host was stopped or stalled; generators' "
        "silence in that span does not end their runs (logged once a minute at most)",
        look.gap);
  }
  if (look.wall_step != 0 && now - step_logged_at_ >= 60) {
    step_logged_at_ = now;
    spdlog::warn(
        "the wall clock moved {:+.1f} s apart from the monotonic clock between two samples (set "
        "by hand or NTP, or again after a VM resumed): unix timestamps across it are that far "
        "off (logged once a minute at most)",
        look.wall_step);
  }
}

void Sampler::start() {
  thread_ = std::thread([this] {
    name_this_thread("lw-sampler");
    run();
    std::lock_guard lock(mutex_);
    finished_ = true;
    wake_.notify_all();
  });
}

bool Sampler::stop(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  stop_ = true;
  wake_.notify_all();
  if (!thread_.joinable()) return true;
  if (!wake_.wait_for(lock, wait, [this] { return finished_; })) {
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

std::shared_ptr<const Snapshot> Sampler::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

void Sampler::run() {
  auto interval = options_.sample_interval;
  auto next = std::chrono::steady_clock::now() + interval;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // Wake on stop or at the tick; a reload waits for the tick (applied at the next sample).
      wake_.wait_until(lock, next, [this] { return stop_ || pending_.has_value(); });
      if (stop_) return;
      if (std::chrono::steady_clock::now() < next && !pending_) continue;
    }
    sample_once();
    next += interval;
    auto now = std::chrono::steady_clock::now();
    if (next <= now) {
      // A sample overran: skip the missed ticks rather than sampling back to back.
      next = now + interval;
    }
  }
}

}  // namespace loadwatch
