#pragma once
// A strict, fast, event-based JSON reader (RFC 8259) over a string_view, for source bodies
// that are large and read for a few keys (Locust's /stats/requests: ~300 KB at 500
// endpoints). nlohmann::json's lexer reads ~80 MB/s here (char-by-char input adapter,
// strtod); this one reads a few hundred MB/s, numbers via std::from_chars.

#include <cstddef>
#include <string>
#include <string_view>

namespace loadwatch {

/// Receives the events of json_sax(). Returning false from any callback stops the parse
/// (json_sax then returns false with error "stopped by handler").
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
  /// Any number, as a double (a literal too small for a double is ±0; one too large is an
  /// error, as in nlohmann::json).
  virtual bool number(double value) = 0;
  virtual bool boolean(bool value) = 0;
  virtual bool null() = 0;
};

/// Parses one JSON text (any value at the top, surrounding whitespace and a leading UTF-8
/// BOM allowed) and feeds
/// `handler`. Strict: rejects trailing commas, comments, leading zeros, control characters
/// and invalid UTF-8 in strings, unpaired surrogate escapes, trailing garbage, and nesting
/// deeper than `max_depth`. Returns false with a message ("offset N: ...") in `error`.
/// Reentrant; never reads outside `text`; never throws except std::bad_alloc.
bool json_sax(std::string_view text, JsonHandler& handler, std::string& error,
              std::size_t max_depth = 64);

}  // namespace loadwatch
