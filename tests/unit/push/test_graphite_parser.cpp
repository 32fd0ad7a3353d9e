#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "push/graphite_parser.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;

TEST_CASE("graphite: a JMeter 2.13 line parses into path, value, timestamp") {
  GraphiteLine l;
  REQUIRE(parse_graphite_line("jmeter.all.a.pct99_9 29.97999999999999 1796083539", l) == nullptr);
  CHECK(l.path == "jmeter.all.a.pct99_9");
  CHECK(l.value == Approx(29.97999999999999));
  CHECK(l.timestamp == 1796083539.0);
}

TEST_CASE("graphite: CRLF, tabs and repeated blanks are tolerated") {
  GraphiteLine l;
  REQUIRE(parse_graphite_line("  a.b\t 5   17\r", l) == nullptr);
  CHECK(l.path == "a.b");
  CHECK(l.value == 5);
  CHECK(l.timestamp == 17);
}

TEST_CASE("graphite: Java Double.toString spellings are numbers") {
  GraphiteLine l;
  REQUIRE(parse_graphite_line("x 1.0E-4 1", l) == nullptr);
  CHECK(l.value == Approx(1e-4));
  REQUIRE(parse_graphite_line("x NaN 1", l) == nullptr);
  CHECK(std::isnan(l.value));
  REQUIRE(parse_graphite_line("x Infinity 1", l) == nullptr);
  CHECK(std::isinf(l.value));
  REQUIRE(parse_graphite_line("x +3 1", l) == nullptr);
  CHECK(l.value == 3);
}

TEST_CASE("graphite: a missing or negative timestamp means now") {
  GraphiteLine l;
  REQUIRE(parse_graphite_line("x 1", l) == nullptr);
  CHECK(l.timestamp < 0);
  REQUIRE(parse_graphite_line("x 1 -1", l) == nullptr);
  CHECK(l.timestamp == -1);
  REQUIRE(parse_graphite_line("x 1 1700000000.5", l) == nullptr);
  CHECK(l.timestamp == 1700000000.5);
}

TEST_CASE("graphite: malformed lines say what is wrong") {
  GraphiteLine l;
  CHECK(std::string(parse_graphite_line("", l)) == "empty line");
  CHECK(std::string(parse_graphite_line("a.b", l)) == "missing value");
  CHECK(std::string(parse_graphite_line("a.b x 1", l)) == "value is not a number");
  CHECK(std::string(parse_graphite_line("a.b 1 2 3", l)) == "more than three fields");
  CHECK(std::string(parse_graphite_line("a.b 1 soon", l)) == "timestamp is not a number");
  CHECK(std::string(parse_graphite_line("a.b 1.5x 1", l)) == "value is not a number");
  CHECK(std::string(parse_graphite_line(std::string_view("a\0b 1 1", 7), l)) ==
        "control character in path");
  CHECK(graphite_line_blank(" \t\r"));
  CHECK_FALSE(graphite_line_blank(" x "));
}

TEST_CASE("graphite: every line of a real JMeter 2.13 capture parses") {
  std::ifstream in(fixture_path("jmeter/graphite_2.13_capture.txt"));
  REQUIRE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    GraphiteLine l;
    INFO(line);
    REQUIRE(parse_graphite_line(line, l) == nullptr);
    CHECK(l.timestamp > 1.7e9);
    ++n;
  }
  CHECK(n == 224);
}
