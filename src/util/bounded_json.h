#pragma once
// Reading JSON that comes from outside the process (files, HTTP answers) with a size cap and
// a depth cap that hold while it is parsed: no tree deeper than the cap is ever built, so
// nothing that copies, compares or frees it recurses further than the cap.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace loadwatch {

/// A JSON text refused: too large, too deep, not JSON, or not the expected shape.
class JsonInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct JsonLimits {
  std::size_t max_bytes = 64u << 20;
  std::size_t max_depth = 64;  // nested arrays and objects; every document we read needs < 10
};

/// Parses `text`; throws JsonInputError naming the cap or the syntax error (never a tree
/// deeper than `limits.max_depth`, never reading past `limits.max_bytes`).
nlohmann::json parse_bounded_json(std::string_view text, const JsonLimits& limits = {});

/// Typed reading of one member of an object, for answers whose shape is not trusted. Absent
/// or null gives `fallback`; a value of another type, or `obj` not an object, throws
/// JsonInputError naming the key (where nlohmann's value() would throw a type_error).
std::string json_string_or(const nlohmann::json& obj, const char* key, std::string fallback = {});
double json_number_or(const nlohmann::json& obj, const char* key, double fallback);
/// The member as an array (an empty one when absent or null); throws on another type.
const nlohmann::json& json_array_or_empty(const nlohmann::json& obj, const char* key);
/// The member as an object (an empty one when absent or null); throws on another type.
const nlohmann::json& json_object_or_empty(const nlohmann::json& obj, const char* key);

}  // namespace loadwatch
