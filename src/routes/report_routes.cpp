#include "routes/report_routes.h"

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "analysis/render.h"
#include "report/render_html.h"
#include "util/heap_trim.h"

namespace loadwatch::report {

namespace {

HttpResponse text(int status, const char* type, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = type;
  r.body = std::move(body);
  return r;
}

HttpResponse error(int status, const char* type, const std::string& message) {
  nlohmann::ordered_json body{{"status", "error"}, {"errorType", type}, {"error", message}};
  // The message may quote the client's bytes: invalid UTF-8 becomes U+FFFD, not a 500.
  return text(status, "application/json",
              body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

/// The last HTML report built, shared by its readers: a burst of readers of one report costs
/// one build and a copy of the page each, not a build each. One build runs at a time.
struct HtmlCache {
  std::mutex building;  // held while a report is built: the others wait, then share it
  std::mutex mutex;     // guards key and html
  std::string key;
  std::shared_ptr<const std::string> html;

  std::shared_ptr<const std::string> find(const std::string& k) {
    std::lock_guard lock(mutex);
    return k == key ? html : nullptr;
  }
  void put(std::string k, std::shared_ptr<const std::string> h) {
    std::lock_guard lock(mutex);
    key = std::move(k);
    html = std::move(h);
  }
};

/// The page is sent from the shared copy: readers of one report hold no copy of their own.
HttpResponse html_response(std::shared_ptr<const std::string> html) {
  HttpResponse r = text(200, "text/html; charset=utf-8", "");
  r.shared_body = std::move(html);
  // The file inlines everything it needs; it may fetch nothing, here or from disk.
  r.headers.push_back({"Content-Security-Policy",
                       "default-src 'none'; script-src 'unsafe-inline'; "
                       "style-src 'unsafe-inline'; img-src data:"});
  return r;
}

}  // namespace

RunSubresource report_subresource(const ReportService& service, const RunBook& book) {
  auto cache = std::make_shared<HtmlCache>();
  return [&service, &book, cache](const Run& run, std::string_view suffix,
                                  const HttpRequest& req) -> std::optional<HttpResponse> {
    if (suffix != "report" && suffix != "report.html") return std::nullopt;
    // A finished run's report does not change: the same page for every reader.
    std::string cache_key;
    std::unique_lock<std::mutex> building;
    if (suffix == "report.html" && !run.open()) {
      cache_key =
          run.id + "\n" + req.query_param("baseline") + "\n" + std::to_string(run.end.value_or(0));
      if (auto hit = cache->find(cache_key)) return html_response(hit);
      building = std::unique_lock(cache->building);
      if (auto hit = cache->find(cache_key)) return html_response(hit);  // built meanwhile
    }
    std::string why;
    std::optional<BuiltReport> built;
    try {
      built = service.report(run, &why);
    } catch (const std::exception& e) {
      return error(500, "internal", std::string("the report could not be built: ") + e.what());
    }
    if (!built) return error(404, "not_found", "no report for run \"" + run.id + "\": " + why);
    if (suffix == "report.html") {
      std::optional<HtmlComparison> cmp;
      std::string base_id = req.query_param("baseline");
      if (!base_id.empty()) {
        auto base_run = plausible_run_id(base_id) ? book.find(base_id) : std::nullopt;
        if (!base_run)
          return error(404, "not_found", "baseline: no run \"" + base_id.substr(0, 64) + "\"");
        std::vector<analysis::Rule> rules;
        try {
          // The CLI's gate: max=p95=+20%&min=rps=-10% as --max/--min (the default without).
          rules = analysis::rules_or_default(req.query_params("max"), req.query_params("min"));
        } catch (const std::invalid_argument& e) {
          return error(400, "bad_data", e.what());
        }
        auto base = service.report(*base_run, &why);
        if (!base) return error(404, "not_found", "baseline: " + why);
        try {
          auto c = analysis::compare_reports(base->parsed(), built->parsed(), rules);
          cmp = HtmlComparison{analysis::comparison_document(c, base_id, run.id), c.regressed(),
                               base_id};
        } catch (const std::exception& e) {
          return error(500, "internal", e.what());
        }
      }
      auto html = std::make_shared<const std::string>(
          render_report_html(built->parsed(), built->report_json, built->timeline_json, cmp));
      note_heap_freed(built->report_json.size() + built->timeline_json.size());
      if (!cache_key.empty()) cache->put(cache_key, html);
      return html_response(html);
    }
    std::string format = req.query_param("format");
    if (format.empty() || format == "json") {
      return text(200, "application/json", built->report_json);
    }
    if (format == "timeline") return text(200, "application/json", built->timeline_json);
    auto f = analysis::parse_format(format);
    if (!f) return error(400, "bad_data", "format: expected json, table, markdown or timeline");
    try {
      return text(200, "text/plain; charset=utf-8", analysis::render_report(built->parsed(), *f));
    } catch (const std::exception& e) {
      return error(500, "internal", e.what());
    }
  };
}

}  // namespace loadwatch::report
