#pragma once
// Collector "locustpush" (off by default): POST /api/v1/push/locust, where the Locust
// listener plugin (scripts/locust/loadwatch_listener.py) sends its exact counts every second.

#include <memory>

#include "collectors/collector.h"
#include "push/locust_push_model.h"
#include "web/http_server.h"

namespace loadwatch {

inline constexpr const char* kLocustPushPath = "/api/v1/push/locust";

/// Handler for POST kLocustPushPath: a JSON body (push/locust_push_parser.h), plain or gzip,
/// at most kLocustPushMaxBody bytes either way. Answers 204 when taken; 400 naming the field
/// that is missing, mistyped or out of range (or a corrupt gzip body); 405 for other methods;
/// 409 for a push older than the source's last one; 413 past the cap; 415 for another
/// Content-Encoding; 429 with Retry-After when the source cap is full. Thread-safe.
HttpHandler make_locust_push_handler(std::shared_ptr<LocustPushModel> model);

/// Factory for the collector table: registers the route on env.http (when present); tells
/// env.runs about the pushed steps only with --push.run-annotations.
std::unique_ptr<Collector> make_locustpush_collector(const CollectorEnv& env);

}  // namespace loadwatch
