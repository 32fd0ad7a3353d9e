#pragma once
// Collector "influx": InfluxDB write endpoints for JMeter's InfluxDB Backend Listener.

#include <cstddef>
#include <memory>

#include "collectors/collector.h"
#include "push/jmeter_model.h"
#include "web/http_server.h"

namespace loadwatch {

/// Largest write body taken, both as received and, for a gzip body, once inflated; beyond it
/// the answer is 413.
inline constexpr std::size_t kInfluxMaxBody = 16u << 20;

/// Handler for `POST /write?db=NAME` (v2 = false) or `POST /api/v2/write?bucket=NAME` (v2 =
/// true): parses the line-protocol body into `model` with source = NAME. A body with
/// `Content-Encoding: gzip` (any case; also x-gzip, concatenated members allowed) is inflated
/// first, `identity` is taken as is. Answers 204 when every line parsed; 400 naming the first
/// malformed lines (the valid lines of the body are still taken, as InfluxDB does) or for a
/// corrupt or truncated gzip body; 405 for other methods; 413 when the gzip body inflates past
/// kInfluxMaxBody (inflation stops there, nothing is taken); 415 for any other encoding
/// (deflate, br, zstd...). Thread-safe.
HttpHandler make_influx_write_handler(std::shared_ptr<JMeterModel> model, bool v2);

/// Factory for the collector table: registers both routes on env.http (when present) and
/// exports what was pushed.
std::unique_ptr<Collector> make_influx_collector(const CollectorEnv& env);

}  // namespace loadwatch
