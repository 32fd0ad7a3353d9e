#pragma once
// The daemon's own routes: /metrics, /, /-/healthy, /-/ready, /api/v1/targets, /api/v1/sources.

#include "sampler/sampler.h"
#include "web/http_server.h"

namespace loadwatch {

/// Adds the routes to `server`; none takes a request body (413). They read only the sampler's
/// latest published snapshot, never /proc, so concurrent scrapes are cheap. `sampler` must
/// outlive the server.
void add_web_routes(HttpServer& server, const Sampler& sampler);

}  // namespace loadwatch
