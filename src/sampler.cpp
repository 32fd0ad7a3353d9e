#include "sampler.h"

#include <spdlog/spdlog.h>

#include "runs/run_book.h"
#include "runs/run_metrics.h"
#include "history/history.h"
#include "version.h"

namespace loadwatch {

namespace {
double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

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
    : options_(options), config_(std::move(config)), proc_(options.procfs), sys_(options.sysfs),
      http_(http), runs_(runs) {
  CollectorEnv env{options_, config_, proc_, sys_, http_, runs_};
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
  CollectorEnv env{options_, config_, proc_, sys_, nullptr, runs_};
  for (auto& e : collectors_) e.collector->reconfigure(env);
  spdlog::info("config reloaded: {} targets, {} sources", config_.targets.size(),
               config_.sources.size());
}

void Sampler::sample_once() {
  apply_pending_config();
  SampleContext ctx{proc_, sys_, unix_now(), {}};
  MetricSink out;
  MetricSink self;
  out.gauge("loadwatch_build_info",
            "A metric with a constant 1 labelled by the version and git revision of loadwatch.",
            {{"version", LOADWATCH_VERSION}, {"revision", LOADWATCH_REVISION}}, 1);
  for (auto& e : collectors_) {
    auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    try {
      e.collector->collect(ctx, out);
    } catch (const std::exception& ex) {
      ok = false;
      spdlog::debug("collector {} failed: {}", e.spec->name, ex.what());
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    self.gauge("loadwatch_collector_duration_seconds",
               "Time the collector took in the last sample.", {{"collector", e.spec->name}}, secs);
    self.gauge("loadwatch_collector_success",
               "1 if the collector succeeded in the last sample, 0 if it failed.",
               {{"collector", e.spec->name}}, ok ? 1 : 0);
  }
  if (runs_) {
    runs_->tick(ctx.now);
    add_run_metrics(runs_->exposed(), out);
  }
  self.gauge("loadwatch_last_sample_timestamp_seconds",
             "Unix time of the sample being served; its age shows a stuck sampler.", {}, ctx.now);
  out.append(self.take());
  auto snap = std::make_shared<const Snapshot>(out.take(), std::move(ctx.targets), ctx.now,
                                               std::move(ctx.sources));
  if (history_) history_->record(snap->families(), ctx.now);
  std::shared_ptr<const Snapshot> previous;
  {
    std::lock_guard lock(mutex_);
    previous = latest_;
  }
  // Serializing here, not in the first scrape after publishing, keeps that cost off scrapers.
  if (previous) snap->prepare_like(*previous);
  {
    std::lock_guard lock(mutex_);
    latest_ = std::move(snap);
  }
  samples_.fetch_add(1);
}

void Sampler::start() {
  thread_ = std::thread([this] {
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
