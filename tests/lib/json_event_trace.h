#pragma once
// Test helper: JSON parse events recorded as text, from json_sax and from nlohmann::json's
// strict SAX parser, so the two can be compared event by event (unit test and fuzz harness).

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sources/json_sax.h"

namespace loadwatch::test {

/// Records events as "|"-terminated text: {, }, [, ], k:name, s:value, n:number, b:1, null.
struct JsonEventTrace : JsonHandler {
  std::string out;
  bool begin_object() override { return add("{"); }
  bool end_object() override { return add("}"); }
  bool begin_array() override { return add("["); }
  bool end_array() override { return add("]"); }
  bool key(std::string_view k) override { return add("k:" + std::string(k)); }
  bool string(std::string_view v) override { return add("s:" + std::string(v)); }
  bool number(double v) override { return add("n:" + num(v)); }
  bool boolean(bool v) override { return add(v ? "b:1" : "b:0"); }
  bool null() override { return add("null"); }
  static std::string num(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (std::fabs(v) < 1e-300) return "0";  // strtod keeps denormals, from_chars says 0
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  bool add(const std::string& e) {
    out += e;
    out += '|';
    return true;
  }
};

/// The same trace from nlohmann's SAX parser (integers as doubles, like json_sax).
struct NlohmannEventTrace : nlohmann::json_sax<nlohmann::json> {
  JsonEventTrace t;
  bool null() override { return t.null(); }
  bool boolean(bool v) override { return t.boolean(v); }
  bool number_integer(number_integer_t v) override { return t.number(double(v)); }
  bool number_unsigned(number_unsigned_t v) override { return t.number(double(v)); }
  bool number_float(number_float_t v, const string_t&) override { return t.number(v); }
  bool string(string_t& v) override { return t.string(v); }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override { return t.begin_object(); }
  bool key(string_t& k) override { return t.key(k); }
  bool end_object() override { return t.end_object(); }
  bool start_array(std::size_t) override { return t.begin_array(); }
  bool end_array() override { return t.end_array(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

}  // namespace loadwatch::test
