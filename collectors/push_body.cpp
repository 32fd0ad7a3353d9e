#include "collectors/push_body.h"

#include <nlohmann/json.hpp>

namespace loadwatch {

namespace {

/// The Content-Encoding value trimmed and lower-cased (codings are case-insensitive, RFC 9110
/// 8.4.1).
std::string content_coding(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  std::string out(value);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

HttpResponse json_error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                   nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

std::optional<std::string_view> push_body(const HttpRequest& req, std::size_t max_body,
                                          GunzipResult& inflated, HttpResponse& error) {
  std::string encoding = content_coding(req.header("content-encoding"));
  if (encoding.empty() || encoding == "identity") return std::string_view(req.body);
  if (encoding != "gzip" && encoding != "x-gzip") {
    error = json_error(415, "Content-Encoding \"" + req.header("content-encoding") +
                                "\" is not supported: use gzip or identity");
    return std::nullopt;
  }
  // The same cap as the raw body: what the route would not take plain, it does not take
  // gzipped either.
  inflated = gzip_decompress(req.body, max_body);
  if (inflated.error == GunzipError::too_large) {
    error = json_error(413, inflated.message);
    return std::nullopt;
  }
  if (inflated.error != GunzipError::none) {
    error = json_error(400, inflated.message);
    return std::nullopt;
  }
  return std::string_view(inflated.data);
}

}  // namespace loadwatch
