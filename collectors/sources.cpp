#include "collectors/sources.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "sources/generator_families.h"
#include "sources/locust.h"
#include "sources/mountebank.h"
#include "sources/prometheus.h"
#include "util/log.h"

namespace loadwatch {

std::unique_ptr<SourceScraper> make_source_scraper(const std::string& kind, RunObserver* runs) {
  if (kind == "mountebank") return make_mountebank_scraper();
  if (kind == "locust") return make_locust_scraper(runs);
  if (kind == "prometheus") return make_prometheus_scraper();
  return nullptr;
}

namespace {

const char* const kDroppedHelp =
    "Series of the source not exported, by reason: max_series (its cap), label_limit, "
    "max_quantiles, max_buckets, duplicate, invalid_label; summed over scrapes.";

bool same_endpoint(const SourceConfig& a, const SourceConfig& b) {
  return a.name == b.name && a.kind == b.kind && a.url == b.url;
}

bool same_settings(const SourceConfig& a, const SourceConfig& b) {
  return a.interval == b.interval && a.timeout == b.timeout && a.max_bytes == b.max_bytes &&
         a.max_series == b.max_series && a.tls == b.tls && a.auth == b.auth;
}

class SourcesCollector : public Collector {
 public:
  explicit SourcesCollector(const CollectorEnv& env) : runs_(env.runs) { build(env.config); }

  ~SourcesCollector() override { stop_all(runners_); }

  void reconfigure(const CollectorEnv& env) override { build(env.config); }

  void collect(SampleContext& ctx, MetricSink& out) override {
    std::unordered_map<std::string, prometheus::MetricType> types;
    for (const auto& f : out.families()) types.emplace(f.name, f.type);

    std::vector<std::shared_ptr<const SourceSnapshot>> snaps;
    snaps.reserve(runners_.size());
    for (const auto& r : runners_) snaps.push_back(r.runner->snapshot());

    for (size_t i = 0; i < runners_.size(); ++i) {
      const SourceConfig& cfg = runners_[i].config;
      const SourceSnapshot& s = *snaps[i];
      ctx.sources.push_back(SourceState{
          cfg.name, cfg.kind, s.up, s.scrapes,
          s.last_error_kind == FetchError::None ? "" : fetch_error_reason(s.last_error_kind),
          s.last_error, s.last_success});
      out.gauge("loadwatch_source_up", "1 if the last scrape of the source succeeded.",
                {{"source", cfg.name}, {"kind", cfg.kind}}, s.up ? 1 : 0);
      out.gauge("loadwatch_source_scrape_duration_seconds", "Duration of the last scrape.",
                {{"source", cfg.name}}, s.duration_seconds);
      out.gauge("loadwatch_source_last_success_timestamp_seconds",
                "Unix time of the last successful scrape, 0 if none yet.", {{"source", cfg.name}},
                s.last_success);
      // The scraped figures' age, from the answer's arrival to this sample. Only while up:
      // a down source exports no generator figures, so no age either.
      if (s.up && s.data_age_uncertainty) {
        add_generator_sample(out, GeneratorFamily::kDataAge, {{"source", cfg.name}},
                             ctx.now - s.answer_arrived);
        add_generator_sample(out, GeneratorFamily::kDataAgeUncertainty, {{"source", cfg.name}},
                             *s.data_age_uncertainty);
      }
      for (size_t k = 0; k < std::size(kFetchErrorReasons); ++k) {
        out.counter("loadwatch_source_errors_total", "Failed scrapes of the source, by reason.",
                    {{"source", cfg.name}, {"reason", fetch_error_reason(kFetchErrorReasons[k])}},
                    s.errors[k]);
      }
      // max_series always has a series, so a dashboard sees 0 before the first drop.
      out.counter("loadwatch_source_dropped_series_total", kDroppedHelp,
                  {{"source", cfg.name}, {"reason", drop_reason::kMaxSeries}},
                  s.dropped_series.count(drop_reason::kMaxSeries)
                      ? s.dropped_series.at(drop_reason::kMaxSeries)
                      : 0);
      for (const auto& [reason, n] : s.dropped_series) {
        if (reason == drop_reason::kMaxSeries) continue;
        out.counter("loadwatch_source_dropped_series_total", kDroppedHelp,
                    {{"source", cfg.name}, {"reason", reason}}, n);
      }
    }
    for (const auto& f : out.families()) types.emplace(f.name, f.type);

    for (size_t i = 0; i < runners_.size(); ++i) {
      for (const auto& fam : snaps[i]->families) {
        auto [it, inserted] = types.emplace(fam.name, fam.type);
        if (!inserted && it->second != fam.type) {
          // Two families of one name but different types cannot both be exposed.
          if (warned_.insert(fam.name).second) {
            spdlog::warn(
                "source {}: family {} clashes with an existing family of another "
                "type, not exported (warned once)",
                runners_[i].config.name, fam.name);
          }
          continue;
        }
        // Families a kind built itself (loadwatch_generator_*, loadwatch_mock_*) are
        // loadwatch's own; re-exported text (any family of a prometheus source, mb_*) never
        // displaces a family loadwatch exports.
        bool own = runners_[i].config.kind != "prometheus" && fam.name.rfind("loadwatch_", 0) == 0;
        if (own) {
          out.family(fam);
        } else {
          out.foreign(fam);
        }
      }
    }
  }

 private:
  struct Entry {
    SourceConfig config;
    std::unique_ptr<SourceRunner> runner;
  };

  static void stop_all(std::vector<Entry>& entries) {
    for (auto& e : entries) e.runner->request_stop();  // all at once: parallel shutdown
    entries.clear();
  }

  void build(const Config& config) {
    std::vector<Entry> next, old = std::move(runners_);
    runners_.clear();
    for (const auto& cfg : config.sources) {
      auto it = std::find_if(old.begin(), old.end(), [&](const Entry& e) {
        return e.runner && same_endpoint(e.config, cfg);
      });
      if (it != old.end()) {
        if (!same_settings(it->config, cfg)) it->runner->set_config(cfg);
        next.push_back({cfg, std::move(it->runner)});
        continue;
      }
      auto scraper = make_source_scraper(cfg.kind, runs_);
      if (!scraper) {
        spdlog::error("source {}: unknown kind \"{}\", skipped", cfg.name, cfg.kind);
        continue;
      }
      next.push_back({cfg, std::make_unique<SourceRunner>(cfg, std::move(scraper))});
    }
    std::erase_if(old, [](const Entry& e) { return !e.runner; });
    stop_all(old);
    runners_ = std::move(next);
  }

  RunObserver* runs_;
  std::vector<Entry> runners_;
  std::set<std::string> warned_;
};

}  // namespace

std::unique_ptr<Collector> make_sources_collector(const CollectorEnv& env) {
  return std::make_unique<SourcesCollector>(env);
}

}  // namespace loadwatch
