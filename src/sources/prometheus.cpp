#include "sources/prometheus.h"

#include <algorithm>

#include "sources/prom_text_parser.h"

namespace loadwatch {

void add_source_label(std::vector<prometheus::MetricFamily>& families, const std::string& source) {
  for (auto& fam : families) {
    for (auto& m : fam.metric) {
      auto taken = [&](const std::string& name) {
        return std::any_of(
            m.label.begin(), m.label.end(),
            [&](const prometheus::ClientMetric::Label& l) { return l.name == name; });
      };
      if (taken("source")) {
        std::string renamed = "exported_source";
        while (taken(renamed)) renamed = "exported_" + renamed;
        for (auto& l : m.label) {
          if (l.name == "source") l.name = renamed;
        }
      }
      m.label.insert(m.label.begin(), {"source", source});
    }
  }
}

namespace {

class PrometheusScraper : public SourceScraper {
 public:
  std::vector<SourceRequest> requests(const SourceConfig& config) const override {
    return {{config.url, kPromTextAccept, false}};
  }

  ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) override {
    ScrapeResult result;
    if (answers.empty()) return result;
    PromTextLimits limits;
    limits.max_series = config.max_series;  // a 1,000,000-series body keeps 1,000 in memory
    PromTextParse parsed = parse_prom_text(answers[0].body, limits);
    if (!parsed.ok()) {
      result.error = FetchError::Parse;
      result.message = config.url + ": " + parsed.error;
      return result;
    }
    add_source_label(parsed.families, config.name);
    // HELP is optional in the format but `promtool check metrics` flags its absence: say
    // where the family comes from rather than leave /metrics failing the lint.
    for (auto& f : parsed.families) {
      if (f.help.empty())
        f.help = "Re-exported from source " + config.name + " (no HELP upstream).";
    }
    result.families = std::move(parsed.families);
    result.dropped = std::move(parsed.dropped);
    return result;
  }
};

}  // namespace

std::unique_ptr<SourceScraper> make_prometheus_scraper() {
  return std::make_unique<PrometheusScraper>();
}

}  // namespace loadwatch
