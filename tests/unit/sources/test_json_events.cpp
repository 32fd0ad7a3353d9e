// read_json_events: nlohmann::json's strict SAX parser seen through JsonHandler. What the
// source parsers rely on: one number type, a leading BOM, every invalid text refused with
// "offset N", the depth cap, and a handler that stops the parse.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "sources/json_events.h"

using loadwatch::JsonHandler;
using loadwatch::read_json_events;

namespace {

/// Records events as "|"-terminated text: {, }, [, ], k:name, s:value, n:number, b:1, null.
struct Trace : JsonHandler {
  std::string out;
  bool begin_object() override { return add("{"); }
  bool end_object() override { return add("}"); }
  bool begin_array() override { return add("["); }
  bool end_array() override { return add("]"); }
  bool key(std::string_view k) override { return add("k:" + std::string(k)); }
  bool string(std::string_view v) override { return add("s:" + std::string(v)); }
  bool number(double v) override {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v == 0 ? 0.0 : v);
    return add("n:" + std::string(buf));
  }
  bool boolean(bool v) override { return add(v ? "b:1" : "b:0"); }
  bool null() override { return add("null"); }
  bool add(const std::string& e) {
    out += e;
    out += '|';
    return true;
  }
};

std::string trace(std::string_view text) {
  Trace t;
  std::string error;
  return read_json_events(text, t, error, 1000000) ? t.out : "ERROR " + error;
}

}  // namespace

TEST_CASE("valid JSON texts and their events, every number a double") {
  CHECK(trace(R"({"a": [1, -2.5e1, true, false, null, "x"], "b": {}})") ==
        "{|k:a|[|n:1|n:-25|b:1|b:0|null|s:x|]|k:b|{|}|}|");
  CHECK(trace(" \t\r\n 3 \n") == "n:3|");
  CHECK(trace("\"top\"") == "s:top|");
  CHECK(trace("[[[]]]") == "[|[|[|]|]|]|");
  CHECK(trace("\xEF\xBB\xBF{}") == "{|}|");  // a leading UTF-8 BOM
  CHECK(trace("-0.0e+0") == "n:0|");
  CHECK(trace("1E2") == "n:100|");
  CHECK(trace("-12") == "n:-12|");
  CHECK(trace("1e-400") == "n:0|");
  CHECK(trace("12345678901234567890") == "n:1.2345678901234567e+19|");  // above int64
  CHECK(trace(R"("\u00e9\uD83D\uDE00\u0041")") ==
        "s:\xC3\xA9\xF0\x9F\x98\x80"
        "A|");
  CHECK(trace(R"({"k\u006By": 1})") == "{|k:kky|n:1|}|");
}

TEST_CASE("invalid JSON texts are refused with the offset") {
  const char* bad[] = {
      "",
      " ",
      "{",
      "}",
      "[",
      "[1,]",
      "[,1]",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "{a:1}",
      "{\"a\":}",
      "[1 2]",
      "01",
      "1.",
      ".5",
      "+1",
      "-",
      "1e",
      "1e+",
      "0x10",
      "NaN",
      "Infinity",
      "nul",
      "tru",
      "truex",
      "[true false]",
      "\"unterminated",
      "\"bad \\x escape\"",
      "\"\\u12\"",
      "\"\\uD800\"",
      "\"\\uDC00\"",
      "\"\\uD800\\u0041\"",
      "\"tab\there\"",
      "\"\xC3\"",
      "\"\xC0\xAF\"",
      "\"\xED\xA0\x80\"",
      "\"\xF5\x80\x80\x80\"",
      "\"\xFF\"",
      "{} {}",
      "[] x",
      "1e400",
      "-1e400",
      "0.001e312",
      "1e99999999999999999999",
      "// c\n1",
      "/* c */ 1",
      "{\"a\":1}}",
      "[1]]",
      "'s'",
  };
  for (const char* text : bad) {
    INFO(text);
    Trace t;
    std::string error;
    CHECK_FALSE(read_json_events(text, t, error));
    CHECK(error.rfind("offset ", 0) == 0);
  }
}

TEST_CASE("nesting beyond max_depth is refused") {
  Trace t;
  std::string error;
  CHECK(read_json_events(std::string(64, '[') + std::string(64, ']'), t, error, 64));
  CHECK_FALSE(read_json_events(std::string(65, '[') + std::string(65, ']'), t, error, 64));
  CHECK(error.find("nested too deeply") != std::string::npos);
  CHECK_FALSE(read_json_events(std::string(100000, '['), t, error));  // default cap: 64
  CHECK(error.find("nested too deeply") != std::string::npos);
}

TEST_CASE("a handler returning false stops the parse") {
  struct StopAtKey : Trace {
    bool key(std::string_view) override { return false; }
  } h;
  std::string error;
  CHECK_FALSE(read_json_events(R"({"a": 1})", h, error));
  CHECK(error == "stopped by handler");
  CHECK(h.out == "{|");
}
