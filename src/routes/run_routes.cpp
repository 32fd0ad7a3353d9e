#include "routes/run_routes.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "util/unix_time.h"

namespace loadwatch {

namespace {

constexpr std::string_view kRuns = "/api/v1/runs";
constexpr std::string_view kWriteFlag = "--web.enable-run-api";

/// Names come from clients and generators: replace, never fail, on anything odd.
std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

HttpResponse json_response(int status, const nlohmann::ordered_json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = dump(body) + "\n";
  return r;
}

/// This loadwatch's clock when it answered (unix seconds, ms): a client that drives several
/// loadwatches measures each one's skew from it.
double answer_time() { return std::round(unix_now() * 1000) / 1000; }

HttpResponse success(int status, nlohmann::ordered_json data,
                     const std::vector<std::string>& warnings = {}) {
  nlohmann::ordered_json body{{"status", "success"}, {"data", std::move(data)}};
  if (!warnings.empty()) body["warnings"] = warnings;
  body["time"] = answer_time();
  return json_response(status, body);
}

HttpResponse error(int status, const char* type, const std::string& message,
                   const std::string& field = "") {
  nlohmann::ordered_json body{{"status", "error"}, {"errorType", type}, {"error", message}};
  if (!field.empty()) body["field"] = field;  // which field of the body to fix
  body["time"] = answer_time();
  return json_response(status, body);
}

HttpResponse bad_request(const RunRequestError& e) {
  return error(400, "bad_data", e.what(), e.field());
}

HttpResponse method_not_allowed(const char* allow) {
  HttpResponse r = error(405, "bad_data", std::string("method not allowed: use ") + allow);
  r.headers.emplace_back("Allow", allow);
  return r;
}

HttpResponse writes_disabled() {
  return error(403, "forbidden",
               "the run API's write endpoints are disabled: start loadwatch with " +
                   std::string(kWriteFlag));
}

bool is_get(const HttpRequest& req) { return req.method == "GET" || req.method == "HEAD"; }

/// Runs a write against the book, mapping refusals to their status codes.
template <typename F>
HttpResponse write(bool enabled, const HttpRequest& req, int status, F&& apply) {
  if (req.method != "POST") return method_not_allowed("POST");
  if (!enabled) return writes_disabled();
  try {
    RunBook::Change change = apply();
    HttpResponse r = success(status, run_to_json(change.run), change.warnings);
    if (status == 201) r.headers.emplace_back("Location", std::string(kRuns) + "/" + change.run.id);
    return r;
  } catch (const RunRequestError& e) {
    return bad_request(e);
  } catch (const RunConflict& e) {
    return error(409, "conflict", e.what());
  }
}

/// A query number in 1..max; `fallback` when absent; nullopt when it is not one.
std::optional<std::size_t> limit_param(const std::string& text, std::size_t fallback,
                                       std::size_t max) {
  if (text.empty()) return fallback;
  if (text.size() > 6) return std::nullopt;
  std::size_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::size_t>(c - '0');
  }
  if (v < 1 || v > max) return std::nullopt;
  return v;
}

/// GET /api/v1/runs: one page, newest first, summaries unless ?phases=1. Each answer is built
/// from at most `limit` runs copied under the lock, so readers cost a page each, not the
/// whole history.
HttpResponse list_page(const RunBook& book, const HttpRequest& req) {
  std::string phases = req.query_param("phases");
  if (!phases.empty() && phases != "0" && phases != "1") {
    return error(400, "bad_data", "phases: want 0 or 1", "phases");
  }
  bool with_phases = phases == "1";
  std::size_t max = with_phases ? kMaxRunsPageWithPhases : kMaxRunsPage;
  auto limit = limit_param(req.query_param("limit"), max, max);
  if (!limit) {
    return error(400, "bad_data", "limit: want 1 to " + std::to_string(max), "limit");
  }
  std::string token = req.query_param("page_token");
  if (!token.empty() && !plausible_run_id(token)) {
    return error(400, "bad_data", "page_token: not one this API gave", "page_token");
  }
  RunBook::Page page = book.page(token, *limit, with_phases, kMaxPhasesPerPage);
  if (!page.found) {
    return error(400, "bad_data", "page_token: that run left the history; list again",
                 "page_token");
  }
  // Written straight from the runs: no JSON tree of the page, nor of a run with its phases.
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/json";
  r.body = R"({"status":"success","data":[)";
  for (std::size_t i = 0; i < page.runs.size(); ++i) {
    if (i) r.body += ',';
    if (with_phases) {
      append_run_json(r.body, page.runs[i]);
    } else {
      r.body += dump(run_summary_json(page.runs[i], page.phase_counts[i]));
    }
    page.runs[i] = Run{};  // its copy is written: give the memory back now
  }
  r.body += ']';
  if (!page.next.empty()) r.body += R"(,"next_page_token":)" + dump(page.next);
  r.body += R"(,"time":)" + dump(answer_time()) + "}\n";
  return r;
}

HttpResponse list_or_start(RunBook& book, bool enabled, const HttpRequest& req) {
  if (is_get(req)) return list_page(book, req);
  if (req.method != "POST") return method_not_allowed("GET, POST");
  return write(enabled, req, 201, [&] { return book.start_run(parse_start_request(req.body)); });
}

HttpResponse one_run(RunBook& book, bool enabled, const RunSubresource& sub,
                     const HttpRequest& req) {
  std::string_view rest = std::string_view(req.path).substr(kRuns.size() + 1);
  if (rest == "current/phases") {
    return write(enabled, req, 201, [&] { return book.add_phase(parse_phase_request(req.body)); });
  }
  if (rest == "current/stop") {
    return write(enabled, req, 200,
                 [&] { return book.stop_run(std::nullopt, parse_stop_request(req.body)); });
  }
  std::string_view suffix;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    suffix = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    // A run named by id: a client acts on its own run, never on one another client opened.
    if (suffix == "hosts" && plausible_run_id(rest)) {
      return write(enabled, req, 200, [&] {
        return book.set_hosts(std::string(rest), parse_hosts_request(req.body));
      });
    }
    if ((suffix == "phases" || suffix == "stop") && plausible_run_id(rest)) {
      std::optional<std::string> id{std::string(rest)};
      if (suffix == "phases") {
        return write(enabled, req, 201,
                     [&] { return book.add_phase(parse_phase_request(req.body), id); });
      }
      return write(enabled, req, 200,
                   [&] { return book.stop_run(id, parse_stop_request(req.body)); });
    }
    if (!sub || suffix.empty()) return error(404, "not_found", "no such endpoint");
  }
  if (!is_get(req)) return method_not_allowed("GET");
  // A run's subresource (its report), once the run is found.
  auto answer = [&](const Run& run) {
    if (suffix.empty()) return success(200, run_to_json(run));
    if (auto r = sub(run, suffix, req)) return *r;
    return error(404, "not_found", "no such endpoint");
  };
  if (rest == "current") {
    auto run = book.current();
    if (!run) return error(404, "not_found", "no run is open");
    return answer(*run);
  }
  std::string id(rest);
  auto run = plausible_run_id(id) ? book.find(id) : std::nullopt;
  if (!run) {
    return error(404, "not_found",
                 plausible_run_id(id) ? "no run \"" + id + "\" (it may have left the history)"
                                      : std::string("not a run id"));
  }
  return answer(*run);
}

}  // namespace

void add_run_routes(HttpServer& server, RunBook& book, bool writes_enabled, AnswerBuilder& builder,
                    RunSubresource subresource) {
  server.route(std::string(kRuns), builder.wrap([&book, writes_enabled](const HttpRequest& req) {
    return list_or_start(book, writes_enabled, req);
  }),
               kMaxRunBodyBytes);
  server.route(std::string(kRuns) + "/*",
               builder.wrap([&book, writes_enabled, subresource](const HttpRequest& req) {
                 return one_run(book, writes_enabled, subresource, req);
               }),
               kMaxRunBodyBytes);
}

}  // namespace loadwatch
