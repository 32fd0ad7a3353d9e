#include <catch2/catch.hpp>
#include <string>

#include "util/bounded_json.h"

using namespace loadwatch;

namespace {

std::string error_of(const std::string& text, JsonLimits limits = {}) {
  try {
    parse_bounded_json(text, limits);
  } catch (const JsonInputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bounded JSON: documents within the caps parse as nlohmann would") {
  auto j = parse_bounded_json(R"({"a": [1, {"b": "c"}], "d": null})");
  CHECK(j == nlohmann::json::parse(R"({"a": [1, {"b": "c"}], "d": null})"));
  JsonLimits three;
  three.max_depth = 3;
  CHECK(parse_bounded_json("[[[1]]]", three) == nlohmann::json::parse("[[[1]]]"));
  CHECK(parse_bounded_json(R"({"a":{"b":[]}})", three).is_object());
}

TEST_CASE("bounded JSON: the depth cap holds during the parse") {
  JsonLimits three;
  three.max_depth = 3;
  CHECK(error_of("[[[[1]]]]", three) == "nested deeper than 3 levels");
  CHECK(error_of(R"({"a":{"b":{"c":{}}}})", three) == "nested deeper than 3 levels");
  // Unclosed and huge: refused at the first bracket beyond the cap, not at the end.
  CHECK(error_of(std::string(50'000'000, '[')) == "nested deeper than 64 levels");
  std::string deep;
  for (int i = 0; i < 100'000; ++i) deep += "{\"a\":";
  deep += "1" + std::string(100'000, '}');
  CHECK(error_of(deep) == "nested deeper than 64 levels");
}

TEST_CASE("bounded JSON: the size cap and syntax errors are messages") {
  JsonLimits small;
  small.max_bytes = 8;
  CHECK(error_of("[1,2,3,4,5]", small) == "larger than 8 bytes");
  CHECK(error_of("[1,").rfind("not valid JSON: ", 0) == 0);
  CHECK(error_of("").rfind("not valid JSON: ", 0) == 0);
}

TEST_CASE("bounded JSON: typed access names the key instead of a type_error") {
  auto j = parse_bounded_json(R"({"s": "x", "n": 2.5, "a": [1], "o": {}, "z": null, "bad": 5})");
  CHECK(json_string_or(j, "s") == "x");
  CHECK(json_string_or(j, "missing", "d") == "d");
  CHECK(json_string_or(j, "z", "d") == "d");
  CHECK(json_number_or(j, "n", 0) == 2.5);
  CHECK(json_array_or_empty(j, "a").size() == 1);
  CHECK(json_array_or_empty(j, "missing").empty());
  CHECK(json_object_or_empty(j, "o").empty());
  CHECK_THROWS_WITH(json_string_or(j, "bad"), "\"bad\": expected a string, got number");
  CHECK_THROWS_WITH(json_number_or(j, "s", 0), "\"s\": expected a number, got string");
  CHECK_THROWS_WITH(json_array_or_empty(j, "o"), "\"o\": expected an array, got object");
  CHECK_THROWS_WITH(json_object_or_empty(j, "a"), "\"a\": expected an object, got array");
  CHECK_THROWS_WITH(json_string_or(nlohmann::json::array(), "id"),
                    "expected an object holding \"id\", got array");
}
