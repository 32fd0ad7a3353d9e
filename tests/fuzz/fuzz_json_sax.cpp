// libFuzzer harness: the JSON event reader (src/json_sax.cpp), differentially against
// nlohmann::json's strict SAX parser: both must accept or reject the same input, and on
// accepted input emit the same events (numbers as doubles, strings unescaped).
// FUZZ_SOURCES: src/json_sax.cpp
// FUZZ_LIBS:
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "json_sax.h"

namespace {

struct Trace : loadwatch::JsonHandler {
  std::string out;
  bool begin_object() override { return add("{"); }
  bool end_object() override { return add("}"); }
  bool begin_array() override { return add("["); }
  bool end_array() override { return add("]"); }
  bool key(std::string_view k) override { return add("k:" + std::string(k)); }
  bool string(std::string_view v) override { return add("s:" + std::string(v)); }
  bool number(double v) override {
    if (std::isnan(v)) __builtin_trap();  // JSON has no NaN
    if (std::isinf(v)) return add(v > 0 ? "n:inf" : "n:-inf");
    if (std::fabs(v) < 1e-300) return add("n:0");  // denormals: strtod keeps, from_chars says 0
    char buf[64];
    std::snprintf(buf, sizeof buf, "n:%.17g", v);
    return add(buf);
  }
  bool boolean(bool v) override { return add(v ? "b:1" : "b:0"); }
  bool null() override { return add("null"); }
  bool add(const std::string& e) {
    out += e;
    out += '|';
    return true;
  }
};

struct NlohmannTrace : nlohmann::json_sax<nlohmann::json> {
  Trace t;
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  Trace mine;
  std::string error;
  bool ok = loadwatch::json_sax(text, mine, error, size_t(1) << 40);
  if (!ok && error.rfind("offset ", 0) != 0) __builtin_trap();
  // nlohmann's lexer takes a NUL byte for the end of input and ignores what follows; a raw
  // NUL is never valid JSON (not even inside a string), so json_sax must reject it.
  if (text.find('\0') != std::string::npos) {
    if (ok) __builtin_trap();
    return 0;
  }
  NlohmannTrace theirs;
  bool theirs_ok = nlohmann::json::sax_parse(text, &theirs);
  if (ok != theirs_ok) __builtin_trap();
  if (ok && mine.out != theirs.t.out) __builtin_trap();
  // The default depth limit only ever turns a valid text into an error.
  Trace limited;
  if (loadwatch::json_sax(text, limited, error) && (!ok || limited.out != mine.out))
    __builtin_trap();
  return 0;
}
