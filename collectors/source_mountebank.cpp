#include "source_mountebank.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "prom_text_parser.h"
#include "source_prometheus.h"

namespace loadwatch {

namespace {

const char* const kRequestsName = "loadwatch_mock_requests_total";
const char* const kRequestsHelp =
    "Requests an imposter received (Mountebank numberOfRequests, kept monotonic across resets).";
const char* const kUnmatchedName = "loadwatch_mock_unmatched_requests_total";
const char* const kUnmatchedHelp =
    "Requests no stub of the imposter matched (Mountebank mb_no_match_total).";

std::string port_text(const nlohmann::json& port) {
  if (port.is_number_unsigned() || port.is_number_integer()) return port.dump();
  if (port.is_number_float()) {
    double v = port.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
      return std::to_string(static_cast<long long>(v));
    }
    return port.dump();
  }
  if (port.is_string()) return port.get<std::string>();
  return {};
}

}  // namespace

bool parse_mountebank_imposters(std::string_view json, std::vector<MountebankImposter>& out,
                                std::string& error) {
  out.clear();
  auto doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
  if (doc.is_discarded()) {
    error = "/imposters: not JSON";
    return false;
  }
  if (!doc.is_object() || !doc.contains("imposters") || !doc["imposters"].is_array()) {
    error = "/imposters: no \"imposters\" list";
    return false;
  }
  for (const auto& imp : doc["imposters"]) {
    if (!imp.is_object()) continue;
    auto proto = imp.find("protocol");
    auto port = imp.find("port");
    if (proto == imp.end() || !proto->is_string() || port == imp.end()) continue;
    std::string port_str = port_text(*port);
    if (port_str.empty()) continue;
    MountebankImposter m;
    m.label = proto->get<std::string>() + ":" + port_str;
    if (auto name = imp.find("name"); name != imp.end() && name->is_string()) {
      m.name = name->get<std::string>();
    }
    if (auto n = imp.find("numberOfRequests"); n != imp.end() && n->is_number()) {
      double v = n->get<double>();  // 1e999 parses as inf
      if (std::isfinite(v)) m.requests = v;
    }
    out.push_back(std::move(m));
  }
  return true;
}

std::string normalise_imposter_label(std::string_view value) {
  // "[http:3000 orders api] " -> "http:3000" (mb's logger prefix, lib/models/imposter.js).
  if (value.empty() || value.front() != '[') return std::string(value);
  std::string_view inner = value.substr(1);
  size_t end = inner.find_first_of(" ]");
  if (end == std::string_view::npos || end == 0) return std::string(value);
  return std::string(inner.substr(0, end));
}

bool mountebank_family_exported(std::string_view name) {
  static constexpr std::string_view exact[] = {
      "mb_request_total", "mb_no_match_total", "mb_predicate_match_duration_seconds",
      "mb_response_generation_duration_seconds", "mb_behavior_duration_seconds",
      "mb_blocked_ip_total"};
  for (auto e : exact) {
    if (name == e) return true;
  }
  return name.rfind("mb_proxy_", 0) == 0;
}

void MountebankMapper::map(const std::vector<MountebankImposter>& imposters,
                           std::vector<prometheus::MetricFamily>* metrics,
                           const std::string& source, MetricSink& out) {
  if (metrics) {
    for (const auto& fam : *metrics) {
      if (fam.name != "mb_process_start_time_seconds" || fam.metric.empty()) continue;
      const auto& m = fam.metric.front();
      double start = fam.type == prometheus::MetricType::Gauge ? m.gauge.value : m.untyped.value;
      if (start_time_ != 0 && start != start_time_) carry_.reset_all();
      start_time_ = start;
    }
  }
  CounterCarry& carry = carry_;
  for (const auto& imp : imposters) {
    out.counter(kRequestsName, kRequestsHelp, {{"source", source}, {"imposter", imp.label}},
                carry.update("requests\x1f" + imp.label, imp.requests));
  }
  if (!metrics) return;

  std::vector<prometheus::MetricFamily> kept;
  std::map<std::string, double> unmatched;
  for (const auto& imp : imposters) unmatched[imp.label] = 0;
  for (auto& fam : *metrics) {
    if (!mountebank_family_exported(fam.name)) continue;
    for (auto& m : fam.metric) {
      for (auto& l : m.label) {
        if (l.name == "imposter") l.value = normalise_imposter_label(l.value);
      }
      if (fam.name == "mb_no_match_total") {
        for (const auto& l : m.label) {
          if (l.name == "imposter") {
            double v = fam.type == prometheus::MetricType::Counter ? m.counter.value
                                                                   : m.untyped.value;
            unmatched[l.value] += v;
          }
        }
      }
    }
    kept.push_back(std::move(fam));
  }
  for (const auto& [imposter, value] : unmatched) {
    out.counter(kUnmatchedName, kUnmatchedHelp, {{"source", source}, {"imposter", imposter}},
                carry.update("unmatched\x1f" + imposter, value));
  }
  add_source_label(kept, source);
  out.append(std::move(kept));
}

namespace {

class MountebankScraper : public SourceScraper {
 public:
  std::vector<SourceRequest> requests(const SourceConfig& config) const override {
    return {{config.url + "/imposters", "application/json", false},
            {config.url + "/metrics", kPromTextAccept, true}};
  }

  ScrapeResult process(const SourceConfig& config, std::vector<FetchResult>& answers) override {
    ScrapeResult result;
    if (answers.empty()) return result;
    std::vector<MountebankImposter> imposters;
    std::string error;
    if (!parse_mountebank_imposters(answers[0].body, imposters, error)) {
      result.error = FetchError::Parse;
      result.message = config.url + error;
      return result;
    }
    std::vector<prometheus::MetricFamily> families;
    bool have_metrics = false;
    if (answers.size() > 1) {
      const FetchResult& m = answers[1];
      if (m.ok()) {
        PromTextParse parsed = parse_prom_text(m.body);
        if (!parsed.ok()) {
          result.error = FetchError::Parse;
          result.message = config.url + "/metrics: " + parsed.error;
          return result;
        }
        families = std::move(parsed.families);
        have_metrics = true;
      } else if (!(m.error == FetchError::HttpStatus && m.status == 404)) {
        result.error = m.error;
        result.message = config.url + "/metrics: " + m.message;
        return result;
      }
    }
    MetricSink sink;
    mapper_.map(imposters, have_metrics ? &families : nullptr, config.name, sink);
    mapper_.end_scrape(config.max_series * 4);
    result.families = sink.take();
    return result;
  }

 private:
  MountebankMapper mapper_;
};

}  // namespace

std::unique_ptr<SourceScraper> make_mountebank_scraper() {
  return std::make_unique<MountebankScraper>();
}

}  // namespace loadwatch
