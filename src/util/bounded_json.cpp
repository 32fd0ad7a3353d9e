#include "util/bounded_json.h"

namespace loadwatch {

namespace {

const nlohmann::json kEmptyArray = nlohmann::json::array();
const nlohmann::json kEmptyObject = nlohmann::json::object();

/// The member, or nullptr when absent or null; throws when `obj` is not an object.
const nlohmann::json* member(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) {
    throw JsonInputError(std::string("expected an object holding \"") + key + "\", got " +
                         obj.type_name());
  }
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const char* key, const char* expected, const nlohmann::json& got) {
  throw JsonInputError(std::string("\"") + key + "\": expected " + expected + ", got " +
                       got.type_name());
}

}  // namespace

nlohmann::json parse_bounded_json(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw JsonInputError("larger than " + std::to_string(limits.max_bytes) + " bytes");
  }
  // The callback sees each array or object start with its depth before anything inside it
  // is parsed, so refusing there stops the parse before a deeper tree exists.
  const std::size_t max_depth = limits.max_depth;
  auto guard = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    if ((event == nlohmann::json::parse_event_t::object_start ||
         event == nlohmann::json::parse_event_t::array_start) &&
        static_cast<std::size_t>(depth) >= max_depth) {
      throw JsonInputError("nested deeper than " + std::to_string(max_depth) + " levels");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), guard);
  } catch (const nlohmann::json::exception& e) {
    throw JsonInputError(std::string("not valid JSON: ") + e.what());
  }
}

std::string json_string_or(const nlohmann::json& obj, const char* key, std::string fallback) {
  const nlohmann::json* v = member(obj, key);
  if (!v) return fallback;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

double json_number_or(const nlohmann::json& obj, const char* key, double fallback) {
  const nlohmann::json* v = member(obj, key);
  if (!v) return fallback;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  return v->get<double>();
}

const nlohmann::json& json_array_or_empty(const nlohmann::json& obj, const char* key) {
  const nlohmann::json* v = member(obj, key);
  if (!v) return kEmptyArray;
  if (!v->is_array()) wrong_type(key, "an array", *v);
  return *v;
}

const nlohmann::json& json_object_or_empty(const nlohmann::json& obj, const char* key) {
  const nlohmann::json* v = member(obj, key);
  if (!v) return kEmptyObject;
  if (!v->is_object()) wrong_type(key, "an object", *v);
  return *v;
}

}  // namespace loadwatch
