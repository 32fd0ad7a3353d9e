#pragma once
// Reading and writing optional fields of the report JSON: absent stays absent, and a field of
// the wrong type or a non-finite number is an error that names the field.

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace loadwatch::analysis::json_fields {

template <typename Json, typename T>
void put(Json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

template <typename Json>
void put(Json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

/// An optional number; null or absent -> nullopt.
inline std::optional<double> number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw std::invalid_argument(std::string(key) + ": expected a number");
  double v = it->get<double>();
  if (!std::isfinite(v)) throw std::invalid_argument(std::string(key) + ": not a finite number");
  return v;
}

/// A number that must be >= 0 (counts, bytes, seconds, cores).
inline std::optional<double> non_negative(const nlohmann::json& j, const char* key) {
  auto v = number(j, key);
  if (v && *v < 0) throw std::invalid_argument(std::string(key) + ": must not be negative");
  return v;
}

/// A ratio in [0, 1].
inline std::optional<double> ratio(const nlohmann::json& j, const char* key) {
  auto v = number(j, key);
  if (v && (*v < 0 || *v > 1)) throw std::invalid_argument(std::string(key) + ": must be 0..1");
  return v;
}

inline std::optional<std::int64_t> integer(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() && it->get<std::uint64_t>() > INT64_MAX)) {
    throw std::invalid_argument(std::string(key) + ": expected an integer");
  }
  return it->get<std::int64_t>();
}

inline std::optional<std::string> string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw std::invalid_argument(std::string(key) + ": expected a string");
  return it->get<std::string>();
}

inline std::optional<bool> boolean(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) throw std::invalid_argument(std::string(key) + ": expected true or false");
  return it->get<bool>();
}

/// An object member that must be an object (or absent).
inline const nlohmann::json* object(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_object()) throw std::invalid_argument(std::string(key) + ": expected an object");
  return &*it;
}

inline const nlohmann::json* array(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_array()) throw std::invalid_argument(std::string(key) + ": expected an array");
  return &*it;
}

/// Runs `read` and prefixes any error with `where` ("phases[2].").
template <typename F>
void within(const std::string& where, F&& read) {
  try {
    read();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(where + e.what());
  }
}

}  // namespace loadwatch::analysis::json_fields
