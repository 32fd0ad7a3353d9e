// libFuzzer harness: the JSON event reader (src/sources/json_sax.cpp), differentially against
// nlohmann::json's strict SAX parser: both must accept or reject the same input, and on
// accepted input emit the same events (numbers as doubles, strings unescaped).
// FUZZ_SOURCES: src/sources/json_sax.cpp
// FUZZ_LIBS:
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sources/json_sax.h"
#include "tests/lib/json_event_trace.h"

namespace {

// json_sax must never report NaN: JSON has none.
struct Trace : loadwatch::test::JsonEventTrace {
  bool number(double v) override {
    if (std::isnan(v)) __builtin_trap();
    return JsonEventTrace::number(v);
  }
};

using loadwatch::test::NlohmannEventTrace;

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
  NlohmannEventTrace theirs;
  bool theirs_ok = nlohmann::json::sax_parse(text, &theirs);
  if (ok != theirs_ok) __builtin_trap();
  if (ok && mine.out != theirs.t.out) __builtin_trap();
  // The default depth limit only ever turns a valid text into an error.
  Trace limited;
  if (loadwatch::json_sax(text, limited, error) && (!ok || limited.out != mine.out))
    __builtin_trap();
  return 0;
}
