#pragma once
// The run API: /api/v1/runs (list, start), /api/v1/runs/{id}, /api/v1/runs/current,
// /api/v1/runs/current/phases, /api/v1/runs/current/stop. Answers in the Prometheus API's
// envelope: {"status":"success","data":...} or {"status":"error","errorType":..,"error":..}.

#include <functional>
#include <optional>
#include <string_view>

#include "runs/run_book.h"
#include "web/http_server.h"

namespace loadwatch {

/// Answers GET /api/v1/runs/{id}/SUFFIX for a run that exists (e.g. its report).
using RunSubresource =
    std::function<std::optional<HttpResponse>(const Run& run, std::string_view suffix,
                                              const HttpRequest& req)>;

/// Adds the routes. Writes (POST) answer 403 unless `writes_enabled` (--web.enable-run-api).
/// `book` must outlive the server.
void add_run_routes(HttpServer& server, RunBook& book, bool writes_enabled,
                    RunSubresource subresource = nullptr);

}  // namespace loadwatch
