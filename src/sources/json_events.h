#pragma once
// Source bodies read as events from nlohmann::json's SAX parser, for bodies that are large and
// read for a few keys (Locust's /stats/requests: ~300 KB at 500 endpoints; a DOM of it takes
// most of the scrape budget). Handlers see one number type and string views, not nlohmann's
// thirteen callbacks.

#include <cstddef>
#include <string>
#include <string_view>

namespace loadwatch {

/// Receives the events of read_json_events(). Returning false from any callback stops the
/// parse (read_json_events then returns false with error "stopped by handler").
class JsonHandler {
 public:
  virtual ~JsonHandler() = default;
  virtual bool begin_object() = 0;
  virtual bool end_object() = 0;
  virtual bool begin_array() = 0;
  virtual bool end_array() = 0;
  /// Object member name, unescaped. The view is valid only during the call.
  virtual bool key(std::string_view name) = 0;
  /// String value, unescaped (valid UTF-8). The view is valid only during the call.
  virtual bool string(std::string_view value) = 0;
  /// Any number, integer or not, as a double (a literal too small for a double is ±0; one
  /// too large is an error).
  virtual bool number(double value) = 0;
  virtual bool boolean(bool value) = 0;
  virtual bool null() = 0;
};

/// Parses one JSON text (RFC 8259, nlohmann::json in strict mode: any value at the top,
/// surrounding whitespace and a leading UTF-8 BOM allowed; no comments, trailing commas or
/// trailing garbage; strings valid UTF-8) and feeds `handler`. Nesting deeper than `max_depth`
/// is refused. Returns false with a message in `error` ("offset N: ..." for a syntax error).
/// Reentrant; never throws except std::bad_alloc.
bool read_json_events(std::string_view text, JsonHandler& handler, std::string& error,
                      std::size_t max_depth = 64);

}  // namespace loadwatch
