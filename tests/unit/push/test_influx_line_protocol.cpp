#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "push/influx_line_protocol.h"

using namespace loadwatch;

namespace {

// Owned copy of a point, so tests can look at it after the callback.
struct Point {
  std::string measurement;
  std::vector<std::pair<std::string, std::string>> tags;
  struct Field {
    std::string key;
    InfluxField::Type type;
    double number;
    std::string text;
  };
  std::vector<Field> fields;
  std::optional<std::int64_t> timestamp;
  std::size_t line;
};

struct Error {
  std::size_t line;
  std::string message, text;
};

struct Parsed {
  std::vector<Point> points;
  std::vector<Error> errors;
};

Parsed parse(std::string_view body) {
  Parsed out;
  parse_influx_lines(
      body,
      [&](const InfluxPoint& p) {
        Point q;
        q.measurement = p.measurement;
        for (auto& t : p.tags) q.tags.emplace_back(t.key, t.value);
        for (auto& f : p.fields) {
          q.fields.push_back({std::string(f.key), f.type, f.number, std::string(f.text)});
        }
        q.timestamp = p.timestamp;
        q.line = p.line;
        out.points.push_back(std::move(q));
      },
      [&](const InfluxParseError& e) {
        out.errors.push_back({e.line, e.message, std::string(e.text)});
      });
  return out;
}

}  // namespace

TEST_CASE("influx: a JMeter 5.x aggregate point") {
  auto r = parse(
      "jmeter,application=shop,transaction=all,statut=all count=120,countError=3,avg=12.5,"
      "min=1.0,max=80.0,hit=120,sb=4560,rb=98765,pct90.0=30.0,pct99.9=79.5 "
      "1700000000123000000\n");
  REQUIRE(r.errors.empty());
  REQUIRE(r.points.size() == 1);
  const auto& p = r.points[0];
  CHECK(p.measurement == "jmeter");
  REQUIRE(p.tags.size() == 3);
  CHECK(p.tags[1] == std::make_pair(std::string("transaction"), std::string("all")));
  REQUIRE(p.fields.size() == 10);
  CHECK(p.fields[0].key == "count");
  CHECK(p.fields[0].type == InfluxField::Type::Float);
  CHECK(p.fields[0].number == 120);
  CHECK(p.fields[9].key == "pct99.9");
  CHECK(p.fields[9].number == 79.5);
  CHECK(p.timestamp == 1700000000123000000);
  CHECK(p.line == 1);
}

TEST_CASE("influx: JMeter's empty application tag value is tolerated") {
  auto r = parse(
      "jmeter,application=,transaction=internal minAT=1,maxAT=2,meanAT=1.5,"
      "startedT=2,endedT=0 1700000000000000000");
  REQUIRE(r.errors.empty());
  REQUIRE(r.points.size() == 1);
  CHECK(r.points[0].tags[0] == std::make_pair(std::string("application"), std::string()));
  CHECK(r.points[0].fields[2].number == 1.5);
}

TEST_CASE("influx: escapes in measurement, tag keys/values and field keys") {
  auto r = parse(R"(my\ meas\,ure=x,tag\ key=a\ b\,c\=d field\=k=1i)");
  REQUIRE(r.errors.empty());
  REQUIRE(r.points.size() == 1);
  const auto& p = r.points[0];
  CHECK(p.measurement == "my meas,ure=x");  // '=' needs no escape in a measurement
  CHECK(p.tags[0].first == "tag key");
  CHECK(p.tags[0].second == "a b,c=d");
  CHECK(p.fields[0].key == "field=k");
  CHECK(p.fields[0].type == InfluxField::Type::Integer);
  CHECK_FALSE(p.timestamp);
}

TEST_CASE("influx: a backslash before another character stays literal") {
  auto r = parse(R"(m,path=C:\temp\x v=1)");
  REQUIRE(r.errors.empty());
  CHECK(r.points[0].tags[0].second == R"(C:\temp\x)");
}

TEST_CASE("influx: quoted string fields with escapes, spaces, commas and newlines") {
  auto r = parse(
      "events,application=shop,title=ApacheJMeter text=\"Test \\\"A\\\", b=c \\\\ "
      "started\" 1\nevents text=\"two\nlines\",n=2 2\nm v=3");
  REQUIRE(r.errors.empty());
  REQUIRE(r.points.size() == 3);
  CHECK(r.points[0].fields[0].type == InfluxField::Type::String);
  CHECK(r.points[0].fields[0].text == "Test \"A\", b=c \\ started");
  CHECK(r.points[1].fields[0].text == "two\nlines");
  CHECK(r.points[1].fields[1].number == 2);
  CHECK(r.points[1].line == 2);
  CHECK(r.points[2].line == 4);  // the string above spans lines 2 and 3
}

TEST_CASE("influx: integer, unsigned, float and boolean values") {
  auto r = parse("m a=-5i,b=18446744073709551615u,c=-1.5e3,d=.5,e=t,f=FALSE,g=True,h=1.");
  REQUIRE(r.errors.empty());
  const auto& f = r.points[0].fields;
  CHECK(f[0].type == InfluxField::Type::Integer);
  CHECK(f[0].number == -5);
  CHECK(f[1].type == InfluxField::Type::UInteger);
  CHECK(f[2].number == -1500);
  CHECK(f[3].number == 0.5);
  CHECK(f[4].type == InfluxField::Type::Boolean);
  CHECK(f[4].number == 1);
  CHECK(f[5].number == 0);
  CHECK(f[6].number == 1);
  CHECK(f[7].number == 1);
}

TEST_CASE("influx: blank lines, comments and CRLF are skipped; line numbers count them") {
  auto r = parse("# comment\r\n\r\n  \nm v=1 5\r\n\nm v=2\r\n");
  REQUIRE(r.errors.empty());
  REQUIRE(r.points.size() == 2);
  CHECK(r.points[0].line == 4);
  CHECK(r.points[0].timestamp == 5);
  CHECK(r.points[1].line == 6);
}

TEST_CASE("influx: malformed lines are reported by line; valid lines around them are kept") {
  auto r = parse(
      "m v=1\n"
      "m\n"
      "m,t v=1\n"
      "m,t=a=b v=1\n"
      "m v=\n"
      "m v=abc\n"
      "m v=1 notatime\n"
      "m v=\"open\n"
      "m v=2\n");
  // The unterminated string swallows the rest of the body, as it does in InfluxDB.
  REQUIRE(r.points.size() == 1);
  CHECK(r.points[0].line == 1);
  REQUIRE(r.errors.size() == 7);
  CHECK(r.errors[0].line == 2);
  CHECK(r.errors[0].message == "missing fields");
  CHECK(r.errors[0].text == "m");
  CHECK(r.errors[1].message == "missing '=' after tag key");
  CHECK(r.errors[2].message == "unescaped '=' in tag value");
  CHECK(r.errors[3].message == "missing field value");
  CHECK(r.errors[4].message == "invalid field value");
  CHECK(r.errors[5].message == "invalid timestamp");
  CHECK(r.errors[5].line == 7);
  CHECK(r.errors[6].message == "unterminated string field value");
  CHECK(r.errors[6].line == 8);
}

TEST_CASE("influx: the line after a malformed one still parses") {
  auto r = parse("m v=abc\nm v=2 3\n");
  REQUIRE(r.errors.size() == 1);
  REQUIRE(r.points.size() == 1);
  CHECK(r.points[0].line == 2);
  CHECK(r.points[0].timestamp == 3);
}

TEST_CASE("influx: out-of-range numbers and NaN/Inf are errors") {
  auto r = parse(
      "m v=9223372036854775808i\nm v=nan\nm v=inf\nm v=1 99999999999999999999\n"
      "m v=1e999\n");
  REQUIRE(r.points.empty());
  REQUIRE(r.errors.size() == 5);
  CHECK(r.errors[0].message == "integer out of range");
  CHECK(r.errors[1].message == "invalid field value");
  CHECK(r.errors[2].message == "invalid field value");
  CHECK(r.errors[3].message == "timestamp out of range");
  CHECK(r.errors[4].message == "float out of range");
}

TEST_CASE("influx: an error names at most 200 bytes of the line") {
  std::string body = "m v=" + std::string(1000, 'x');
  auto r = parse(body);
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].text.size() == 200);
}

TEST_CASE("influx: precision parameter") {
  CHECK(influx_precision_ns("") == 1);
  CHECK(influx_precision_ns("ns") == 1);
  CHECK(influx_precision_ns("n") == 1);
  CHECK(influx_precision_ns("u") == 1000);
  CHECK(influx_precision_ns("ms") == 1000000);
  CHECK(influx_precision_ns("s") == 1000000000);
  CHECK(influx_precision_ns("h") == 3600000000000);
  CHECK_FALSE(influx_precision_ns("fortnight"));
}

TEST_CASE("influx: fields and tags per point are capped; the next line is still read") {
  std::string fields = "f0=1";
  for (std::size_t i = 1; i < kInfluxMaxFields; ++i) fields += ",f" + std::to_string(i) + "=1";
  std::string tags;
  for (std::size_t i = 0; i < kInfluxMaxTags; ++i) tags += ",t" + std::to_string(i) + "=v";
  auto r = parse("m" + tags + " " + fields + "\n" +         // exactly at both caps: taken
                 "m " + fields + ",one=1 2\n" +             // a field too many
                 "m" + tags + ",one=v v=1\n" + "m v=2\n");  // a tag too many, then a good line
  REQUIRE(r.points.size() == 2);
  CHECK(r.points[0].fields.size() == kInfluxMaxFields);
  CHECK(r.points[0].tags.size() == kInfluxMaxTags);
  REQUIRE(r.errors.size() == 2);
  CHECK(r.errors[0].message == "too many fields");
  CHECK(r.errors[0].line == 2);
  CHECK(r.errors[1].message == "too many tags");
}
