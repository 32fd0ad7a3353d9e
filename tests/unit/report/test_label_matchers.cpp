// `report --prometheus --match`: what is accepted goes into PromQL in one canonical form, and
// every malformed set is refused with its position, never pasted into a query.
#include <catch2/catch.hpp>
#include <string>

#include "report/label_matchers.h"

using loadwatch::report::kMaxMatcherBytes;
using loadwatch::report::kMaxMatchers;
using loadwatch::report::LabelMatcherError;
using loadwatch::report::parse_label_matchers;

TEST_CASE("label matchers are written back canonically") {
  CHECK(parse_label_matchers("") == "");
  CHECK(parse_label_matchers("{}") == "");
  CHECK(parse_label_matchers(R"({job="loadwatch",env="perf"})") == R"(job="loadwatch",env="perf")");
  CHECK(parse_label_matchers(R"( { job = "lw" , env=~'perf|soak', dc!~`eu-.*`, x!="" , } )") ==
        R"(job="lw",env=~"perf|soak",dc!~"eu-.*",x!="")");
  CHECK(parse_label_matchers(R"(job="loadwatch")") == R"(job="loadwatch")");
  // Escapes are read as PromQL reads them and written again, so a quote cannot end the value.
  CHECK(parse_label_matchers(R"({a="x\"y\\z\n"})") == R"(a="x\"y\\z\n")");
  CHECK(parse_label_matchers(R"({a='it\'s "q"'})") == R"(a="it's \"q\"")");
  CHECK(parse_label_matchers(R"({a=`back\slash"`})") == R"(a="back\\slash\"")");
}

TEST_CASE("malformed label matchers are refused with where and why") {
  auto refused = [](const std::string& text, const std::string& why) {
    try {
      parse_label_matchers(text);
    } catch (const LabelMatcherError& e) {
      INFO(text << " -> " << e.what());
      CHECK(std::string(e.what()).find(why) != std::string::npos);
      CHECK(std::string(e.what()).rfind("--match: ", 0) == 0);
      return;
    }
    FAIL(text << " was accepted");
  };
  refused("{job=\"lw\"", "expected , or }");
  refused("{job=\"lw\"}}", "unexpected text");
  refused("{job=lw}", "expected a quoted value");
  refused("{job==\"lw\"}", "expected a quoted value");
  refused("{job~\"lw\"}", "expected =, !=, =~ or !~");
  refused("{1job=\"lw\"}", "expected a label name");
  refused("{job-x=\"lw\"}", "expected =, !=, =~ or !~");
  refused("{job=\"lw}", "does not end");
  refused("{job=\"lw\\q\"}", "unknown escape \\q");
  refused("{job=\"l\nw\"}", "a control byte");
  refused("{job=\"lw\" env=\"x\"}", "expected , or }");
  refused("{__name__=\"x\"}", "__name__");
  refused("{job=\"lw\"} or up", "unexpected text");
  refused("up{job=\"lw\"}", "expected =, !=, =~ or !~");
  refused(",", "expected a label name");
  refused("{job=\"lw\",,}", "expected a label name");
  std::string many = "{";
  for (std::size_t i = 0; i <= kMaxMatchers; ++i) many += "l" + std::to_string(i) + "=\"v\",";
  refused(many + "}", "more than 16 matchers");
  refused("{job=\"" + std::string(kMaxMatcherBytes, 'x') + "\"}", "longer than 1024 bytes");
}

TEST_CASE("the byte count of an error is where the parser stopped") {
  try {
    parse_label_matchers("{job=\"lw\", =\"x\"}");
    FAIL("accepted");
  } catch (const LabelMatcherError& e) {
    CHECK(std::string(e.what()) ==
          "--match: at byte 12: expected a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  }
}
