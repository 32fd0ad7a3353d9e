#pragma once
// InfluxDB line protocol (1.x /write and 2.x /api/v2/write bodies).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

struct InfluxTag {
  std::string_view key;
  std::string_view value;  // may be empty (JMeter sends `application=` when unset)
};

struct InfluxField {
  enum class Type { Float, Integer, UInteger, String, Boolean };
  std::string_view key;
  Type type = Type::Float;
  /// Numeric value for Float/Integer/UInteger (integers converted), 1/0 for Boolean.
  double number = 0;
  std::string_view text;  // String only, unescaped
};

/// One point. All views are unescaped and valid only during the on_point callback (they point
/// into the body or into the parser's scratch buffer).
struct InfluxPoint {
  std::string_view measurement;
  std::vector<InfluxTag> tags;
  std::vector<InfluxField> fields;
  std::optional<std::int64_t> timestamp;  // as sent, in the request's precision
  std::size_t line = 0;                   // 1-based line number where the point starts

  /// Value of a tag, or nullopt when absent.
  std::optional<std::string_view> tag(std::string_view key) const;
  const InfluxField* field(std::string_view key) const;
};

struct InfluxParseError {
  std::size_t line = 0;      // 1-based
  const char* message = "";  // static text
  std::string_view text;     // the offending line (truncated to 200 bytes)
};

/// Fields and tags of one point; a line with more is malformed ("too many fields"/"too many
/// tags"), so a 16 MiB body of `a=1,b=1,...` costs its size, not 100 bytes per field.
/// JMeter writes about 15 fields and 5 tags.
inline constexpr std::size_t kInfluxMaxFields = 1024;
inline constexpr std::size_t kInfluxMaxTags = 256;

/// Parses a whole body: calls on_point for each valid point and on_error for each malformed
/// line, then goes on with the next line (InfluxDB takes the valid points of a body too).
/// Blank lines and `#` comment lines are skipped. Pure apart from the callbacks; never throws
/// on any input; every loop is bounded by the body size.
void parse_influx_lines(std::string_view body,
                        const std::function<void(const InfluxPoint&)>& on_point,
                        const std::function<void(const InfluxParseError&)>& on_error);

/// Nanoseconds per unit of a `precision` query parameter (1.x: n, u, ms, s, m, h; 2.x: ns,
/// us, ms, s). Empty means nanoseconds. nullopt for an unknown precision.
std::optional<std::int64_t> influx_precision_ns(std::string_view precision);

}  // namespace loadwatch
