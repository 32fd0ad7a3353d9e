#include "web/routes/report_routes.h"

#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "report/render_html.h"

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

}  // namespace

RunSubresource report_subresource(const ReportService& service, const RunBook& book) {
  return [&service, &book](const Run& run, std::string_view suffix,
                           const HttpRequest& req) -> std::optional<HttpResponse> {
    if (suffix != "report" && suffix != "report.html") return std::nullopt;
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
        if (!base_run) return error(404, "not_found", "baseline: no run \"" + base_id.substr(0, 64) + "\"");
        auto base = service.report(*base_run, &why);
        if (!base) return error(404, "not_found", "baseline: " + why);
        try {
          auto c = analysis::compare_reports(analysis::report_from_json(base->report_json),
                                             analysis::report_from_json(built->report_json),
                                             analysis::default_rules());
          cmp = HtmlComparison{
              analysis::render_comparison(c, analysis::Format::table, base_id, run.id),
              c.regressed(), base_id};
        } catch (const std::exception& e) {
          return error(500, "internal", e.what());
        }
      }
      HttpResponse r = text(200, "text/html; charset=utf-8",
                            render_report_html(built->report_json, built->timeline_json, cmp));
      // The file inlines everything it needs; it may fetch nothing, here or from disk.
      r.headers.push_back({"Content-Security-Policy",
                           "default-src 'none'; script-src 'unsafe-inline'; "
                           "style-src 'unsafe-inline'; img-src data:"});
      return r;
    }
    std::string format = req.query_param("format");
    if (format.empty() || format == "json") {
      return text(200, "application/json", built->report_json);
    }
    if (format == "timeline") return text(200, "application/json", built->timeline_json);
    auto f = analysis::parse_format(format);
    if (!f) return error(400, "bad_data", "format: expected json, table, markdown or timeline");
    try {
      return text(200, "text/plain; charset=utf-8",
                  analysis::render_report(analysis::report_from_json(built->report_json), *f));
    } catch (const std::exception& e) {
      return error(500, "internal", e.what());
    }
  };
}

}  // namespace loadwatch::report
