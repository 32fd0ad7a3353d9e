#pragma once
// The live page's routes: /api/v1/history, /api/v1/history/series and /static/* (its script,
// styles and uPlot, embedded in the binary). The page itself is the landing page at /.

#include <string>

#include "routes/answer_builder.h"
#include "routes/history_query.h"
#include "sampler/sampler.h"
#include "web/http_server.h"

namespace loadwatch {

class History;

/// Values in one /api/v1/history answer (docs/history.md); the names per request are capped
/// in history_query.h.
constexpr std::size_t kHistoryMaxValuesPerResponse = 1'000'000;

/// Content-Security-Policy of the live page and its files: nothing from another origin, no
/// inline script or style.
extern const char* const kLivePageCsp;

/// Adds the routes; the history's answers (up to a million values) are built on `builder`.
/// `history` may be null (history off): the history routes then answer 404. `sampler`,
/// `history` and `builder` must outlive the server.
void add_live_routes(HttpServer& server, const Sampler& sampler, const History* history,
                     AnswerBuilder& builder);

/// The body of GET /api/v1/history for `req` (status 200, or 400 with a message): exposed so
/// benchmarks and tests call it without a server.
HttpResponse history_response(const History& history, const HttpRequest& req);

}  // namespace loadwatch
