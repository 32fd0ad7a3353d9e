#pragma once
// The run API: /api/v1/runs (list, paged; start), /api/v1/runs/{id}, /api/v1/runs/current,
// /api/v1/runs/{id}/phases, /api/v1/runs/{id}/stop (and current/phases, current/stop). Answers in
// the Prometheus API's envelope: {"status":"success","data":...} or
// {"status":"error","errorType":..,"error":..}.

#include <functional>
#include <optional>
#include <string_view>

#include "routes/answer_builder.h"
#include "runs/run_book.h"
#include "web/http_server.h"

namespace loadwatch {

/// Runs per page of GET /api/v1/runs: summaries, and with ?phases=1.
inline constexpr std::size_t kMaxRunsPage = 500;
inline constexpr std::size_t kMaxRunsPageWithPhases = 10;
/// Phases per page with ?phases=1 (a page holds at least one run, whatever it has).
inline constexpr std::size_t kMaxPhasesPerPage = 2000;

/// Answers GET /api/v1/runs/{id}/SUFFIX for a run that exists (e.g. its report).
using RunSubresource = std::function<std::optional<HttpResponse>(
    const Run& run, std::string_view suffix, const HttpRequest& req)>;

/// Adds the routes, each answered on `builder` (a run carries up to 1,000 phases: every answer
/// of the run API may be a big one). Writes (POST) answer 403 unless `writes_enabled`
/// (--web.enable-run-api). `book` and `builder` must outlive the server.
void add_run_routes(HttpServer& server, RunBook& book, bool writes_enabled, AnswerBuilder& builder,
                    RunSubresource subresource = nullptr);

}  // namespace loadwatch
