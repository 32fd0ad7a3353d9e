#pragma once
// What the push routes (influx, locustpush) share: a JSON error answer, and a request body
// inflated when it came gzipped, within the route's cap.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "util/gzip.h"
#include "web/http_server.h"

namespace loadwatch {

/// {"error": message} with `status`; invalid UTF-8 in the message (it may quote the client's
/// bytes) becomes U+FFFD.
HttpResponse json_error(int status, const std::string& message);

/// The body of `req` as the route reads it: as sent for no Content-Encoding or identity,
/// inflated into `inflated` for gzip or x-gzip (any case). Empty optional with `error` set to
/// the answer for a body past `max_body` once inflated (413), a corrupt gzip body (400) or
/// any other encoding (415).
std::optional<std::string_view> push_body(const HttpRequest& req, std::size_t max_body,
                                          GunzipResult& inflated, HttpResponse& error);

}  // namespace loadwatch
