// json_sax: the RFC 8259 grammar case by case, and agreement with nlohmann::json (Debian's
// JSON library, strict mode) on what is valid and on every event, over generated inputs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "sources/json_sax.h"
#include "tests/lib/json_event_trace.h"

using loadwatch::json_sax;

namespace {

using Trace = loadwatch::test::JsonEventTrace;
using NlohmannTrace = loadwatch::test::NlohmannEventTrace;

std::string trace(std::string_view text, bool* ok = nullptr) {
  Trace t;
  std::string error;
  bool good = json_sax(text, t, error, 1000000);
  if (ok) *ok = good;
  return good ? t.out : "ERROR";
}

std::string nlohmann_trace(const std::string& text) {
  NlohmannTrace n;
  bool good = nlohmann::json::sax_parse(text, &n);
  return good ? n.t.out : "ERROR";
}

}  // namespace

TEST_CASE("valid JSON texts and their events", "[json_sax]") {
  CHECK(trace(R"({"a": [1, -2.5e1, true, false, null, "x"], "b": {}})") ==
        "{|k:a|[|n:1|n:-25|b:1|b:0|null|s:x|]|k:b|{|}|}|");
  CHECK(trace(" \t\r\n 3 \n") == "n:3|");
  CHECK(trace("\"top\"") == "s:top|");
  CHECK(trace("[]") == "[|]|");
  CHECK(trace("[[[]]]") == "[|[|[|]|]|]|");
  CHECK(trace("\xEF\xBB\xBF{}") == "{|}|");
  CHECK(trace("0") == "n:0|");
  CHECK(trace("-0.0e+0") == "n:0|");
  CHECK(trace("1E2") == "n:100|");
  CHECK(trace("1e-400") == "n:0|");
  CHECK(trace("0.0000000001e-320") == "n:0|");
  CHECK(trace("1" + std::string(400, '0') + "e-100") == "n:1.0000000000000001e+300|");
  CHECK(trace("12345678901234567890") == "n:1.2345678901234567e+19|");
}

TEST_CASE("string escapes and UTF-8", "[json_sax]") {
  CHECK(trace(R"("a\"b\\c\/d\be\ff\ng\rh\ti")") == "s:a\"b\\c/d\be\ff\ng\rh\ti|");
  CHECK(trace(R"("\u00e9\u20ac\uD83D\uDE00\u0041")") ==
        "s:\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"
        "A|");
  CHECK(trace("\"h\xC3\xA9llo \xF0\x9F\x98\x80\"") == "s:h\xC3\xA9llo \xF0\x9F\x98\x80|");
  CHECK(trace(R"({"k\u006By": 1})") == "{|k:kky|n:1|}|");
  std::string nul = trace(R"("a\u0000b")");
  CHECK(nul == std::string("s:a\0b|", 6));
}

TEST_CASE("invalid JSON texts are rejected", "[json_sax]") {
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
    CHECK_FALSE(json_sax(text, t, error));
    CHECK(error.rfind("offset ", 0) == 0);
  }
}

TEST_CASE("nesting beyond max_depth is refused", "[json_sax]") {
  Trace t;
  std::string error;
  CHECK(json_sax(std::string(64, '[') + std::string(64, ']'), t, error, 64));
  CHECK_FALSE(json_sax(std::string(65, '[') + std::string(65, ']'), t, error, 64));
  CHECK(error.find("nested too deeply") != std::string::npos);
}

TEST_CASE("a handler returning false stops the parse", "[json_sax]") {
  struct StopAtKey : Trace {
    bool key(std::string_view) override { return false; }
  } h;
  std::string error;
  CHECK_FALSE(json_sax(R"({"a": 1})", h, error));
  CHECK(error.find("stopped by handler") != std::string::npos);
}

TEST_CASE("same verdict and events as nlohmann::json on generated inputs", "[json_sax]") {
  // Mutations of valid documents: single-byte edits hit every branch of the grammar.
  const std::string seeds[] = {
      R"({"stats": [{"name": "/a\u00e9", "num_requests": 12, "avg": 1.5e-3, "m": null},
                    {"name": "Aggregated", "method": "", "x": [true, false, -0]}],
          "state": "running", "user_count": 3, "s": "\ud83d\ude00 \" \\ \/"})",
      "[1, 2.5, -3e+2, \"x\", {}, [], {\"k\": [null]}]",
      "\"h\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"",
  };
  const std::string alphabet =
      "{}[],:\"\\/ ute0123456789.-+eEnrlfaxuDdc\xC3\xA9\xED\xA0\x80\xF0\x9F";
  std::mt19937 rng(7);
  int compared = 0, valid = 0;
  for (const auto& seed : seeds) {
    CHECK(trace(seed) == nlohmann_trace(seed));
    for (int i = 0; i < 4000; ++i) {
      std::string s = seed;
      int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rng() % s.size();
        switch (rng() % 3) {
          case 0:
            s[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            s.erase(at, 1);
            break;
          default:
            s.insert(at, 1, alphabet[rng() % alphabet.size()]);
            break;
        }
      }
      bool ok = false;
      std::string mine = trace(s, &ok);
      std::string theirs = nlohmann_trace(s);
      INFO(s);
      CHECK(mine == theirs);
      ++compared;
      valid += ok;
    }
  }
  CHECK(compared == 12000);
  CHECK(valid > 100);  // the mutations keep some inputs valid, so events are compared too
}
