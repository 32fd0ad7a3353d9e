// Run API bodies: what is accepted, and that every refusal names the field to fix.
#include <catch2/catch.hpp>
#include <string>

#include "metrics/exposition.h"
#include "runs/run_request.h"

using namespace loadwatch;

namespace {

std::string start_field(const std::string& body) {
  try {
    parse_start_request(body);
  } catch (const RunRequestError& e) {
    return e.field();
  }
  return "(accepted)";
}

std::string phase_field(const std::string& body) {
  try {
    parse_phase_request(body);
  } catch (const RunRequestError& e) {
    return e.field();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a start body gives the name and labels") {
  auto r =
      parse_start_request(R"({"name": "checkout", "labels": {"build": "1234", "env": "stage"}})");
  CHECK(r.name == "checkout");
  CHECK(r.labels.size() == 2);
  CHECK(r.labels.at("build") == "1234");
  CHECK(parse_start_request(R"({"name":"x","labels":null})").labels.empty());
  CHECK(parse_start_request("{\"name\":\"caf\xc3\xa9 \xe6\xb5\x8b\xe8\xaf\x95\"}").name ==
        "caf\xc3\xa9 \xe6\xb5\x8b\xe8\xaf\x95");
}

TEST_CASE("a bad start body names the field") {
  CHECK(start_field("") == "body");
  CHECK(start_field("{") == "body");
  CHECK(start_field("[]") == "body");
  CHECK(start_field(R"("checkout")") == "body");
  CHECK(start_field("{}") == "name");
  CHECK(start_field(R"({"name": 3})") == "name");
  CHECK(start_field(R"({"name": ""})") == "name");
  CHECK(start_field(R"({"name": ")" + std::string(129, 'a') + "\"}") == "name");
  CHECK(start_field(R"({"name": ")" + std::string(128, 'a') + "\"}") == "(accepted)");
  CHECK(start_field(R"({"name": "a\nb"})") == "name");
  CHECK(start_field(R"({"name": "a\u0000b"})") == "name");
  CHECK(start_field(R"({"name": "x", "label": {}})") == "label");
  CHECK(start_field(R"({"name": "x", "labels": []})") == "labels");
  CHECK(start_field(R"({"name": "x", "labels": {"build": 3}})") == "labels.build");
  CHECK(start_field(R"({"name": "x", "labels": {"1st": "a"}})") == "labels.1st");
  CHECK(start_field(R"({"name": "x", "labels": {"__name__": "a"}})") == "labels.__name__");
  CHECK(start_field(R"({"name": "x", "labels": {"a-b": "a"}})") == "labels.a-b");
  CHECK(start_field(R"({"name": "x", "labels": {"k": ")" + std::string(257, 'v') + "\"}}") ==
        "labels.k");
  CHECK(start_field(R"({"name": "x", "labels": {"k": "a\tb"}})") == "labels.k");
  std::string many = R"({"name": "x", "labels": {)";
  for (int i = 0; i < 33; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  CHECK(start_field(many + "}}") == "labels");
}

TEST_CASE("invalid UTF-8 and deep or huge bodies are refused") {
  // nlohmann refuses invalid UTF-8 inside strings while parsing: the whole body is bad.
  CHECK(start_field("{\"name\": \"a\xff\"}") == "body");
  CHECK(start_field("{\"name\": \"\xed\xa0\x80\"}") == "body");  // a UTF-16 surrogate
  CHECK(start_field(R"({"name": "x", "labels": {"k": {"deeper": {"deeper": {"deeper": 1}}}}})") ==
        "body");
  CHECK(start_field(std::string(100000, '[')) == "body");
  CHECK(start_field(R"({"name": ")" + std::string(70000, 'a') + "\"}") == "body");
  // A number past a double is nlohmann's out_of_range, not a parse_error: still the body.
  CHECK(start_field(R"({"name": "x", "n": 1e999})") == "body");
  CHECK(phase_field(R"({"users": 1796141622e609})") == "body");
  // An unknown field with an empty name: the refusal still names where to look.
  CHECK(start_field(R"({"name": "x", "": 100})") == "body");
  CHECK(phase_field(R"({"users": 5, "": 1})") == "body");
}

TEST_CASE("a phase body takes a name, users, or both") {
  auto a = parse_phase_request(R"({"users": 50})");
  CHECK(a.name == "users=50");
  CHECK(a.users == 50);
  auto b = parse_phase_request(R"({"name": "warm-up"})");
  CHECK(b.name == "warm-up");
  CHECK_FALSE(b.users);
  auto c = parse_phase_request(R"({"name": "step 2", "users": 100.0})");
  CHECK(c.name == "step 2");
  CHECK(c.users == 100);
  CHECK(parse_phase_request(R"({"users": 0})").users == 0);
}

TEST_CASE("a bad phase body names the field") {
  CHECK(phase_field("{}") == "name");
  CHECK(phase_field(R"({"users": null})") == "name");
  CHECK(phase_field(R"({"users": "50"})") == "users");
  CHECK(phase_field(R"({"users": 1.5})") == "users");
  CHECK(phase_field(R"({"users": -1})") == "users");
  CHECK(phase_field(R"({"users": 1e30})") == "users");
  CHECK(phase_field(R"({"users": 1000000001})") == "users");
  CHECK(phase_field(R"({"users": 5, "name": ""})") == "name");
  CHECK(phase_field(R"({"users": 5, "phase": "x"})") == "phase");
}

TEST_CASE("stop takes nothing, an empty object or an instant") {
  CHECK_NOTHROW(parse_stop_request(""));
  CHECK_NOTHROW(parse_stop_request(" \n"));
  CHECK_NOTHROW(parse_stop_request("{}"));
  CHECK_THROWS_AS(parse_stop_request(R"({"force": true})"), RunRequestError);
  CHECK_THROWS_AS(parse_stop_request("nope"), RunRequestError);
}

TEST_CASE("UTF-8 validation follows RFC 3629") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain"));
  CHECK(valid_utf8("\xc3\xa9\xe6\xb5\x8b\xf0\x9f\x98\x80"));
  CHECK_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(valid_utf8("\xe0\x80\xaf"));      // overlong
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(valid_utf8("\xe6\xb5"));          // cut short
  CHECK_FALSE(valid_utf8("\x80"));
}

TEST_CASE("names from generators are cleaned, not refused") {
  CHECK(clean_name("Checkout test", "fallback") == "Checkout test");
  CHECK(clean_name("a\xff"
                   "b\nc",
                   "fallback") == "a?b?c");
  CHECK(clean_name("", "fallback") == "fallback");
  std::string long_name(200, 'x');
  CHECK(clean_name(long_name, "f").size() == kMaxRunNameBytes);
  // Cut on a character boundary: never half of a multi-byte character.
  std::string wide;
  for (int i = 0; i < 60; ++i) wide += "\xe6\xb5\x8b";
  std::string cut = clean_name(wide, "f");
  CHECK(cut.size() <= kMaxRunNameBytes);
  CHECK(valid_utf8(cut));
  CHECK(name_problem(cut).empty());
}

TEST_CASE("C1 controls, bidi and format characters and duplicate keys are refused") {
  CHECK(start_field("{\"name\": \"a\xc2\x85z\"}") == "name");      // U+0085 NEL
  CHECK(start_field("{\"name\": \"a\xc2\x9bz\"}") == "name");      // U+009B CSI
  CHECK(start_field("{\"name\": \"a\xe2\x80\xaez\"}") == "name");  // U+202E RLO
  CHECK(start_field("{\"name\": \"a\xe2\x81\xa6z\"}") == "name");  // U+2066 LRI
  CHECK(start_field("{\"name\": \"a\xe2\x80\x8bz\"}") == "name");  // U+200B ZWSP
  CHECK(start_field("{\"name\": \"a\xe2\x80\xa8z\"}") == "name");  // U+2028 LS
  CHECK(start_field("{\"name\": \"a\xef\xbb\xbfz\"}") == "name");  // U+FEFF BOM
  CHECK(start_field(R"({"name": "a\u0085z"})") == "name");         // escaped in JSON too
  CHECK(start_field(R"({"name": "a\u202Ez"})") == "name");
  CHECK(start_field(R"({"name": "x", "labels": {"k": "a\u202Eb"}})") == "labels.k");
  CHECK(phase_field(R"({"name": "a\u009Bb"})") == "name");
  // What stays allowed: accents, CJK, emoji, a no-break space (U+00A0).
  CHECK(start_field("{\"name\": \"caf\xc3\xa9 \xe6\xb5\x8b \xf0\x9f\x9a\x80\xc2\xa0x\"}") ==
        "(accepted)");
  CHECK(start_field(R"({"name": "a", "name": "b"})") == "body");
  CHECK(start_field(R"({"name": "x", "labels": {"k": "1", "k": "2"}})") == "body");
  CHECK(phase_field(R"({"users": 1, "users": 2})") == "body");
  // Cleaning an inferred name turns the same characters into '?'.
  CHECK(clean_name("a\xe2\x80\xaez\xc2\x85", "fallback") == "a?z?");
}

TEST_CASE("one run across loadwatches: a given id and instants") {
  auto start =
      parse_start_request(R"({"name": "x", "id": "20261202T091801-x", "at": 1796203081.5})");
  CHECK(start.id == "20261202T091801-x");
  CHECK(start.at == 1796203081.5);
  CHECK(start_field(R"({"name": "x", "id": "../etc/passwd"})") == "id");
  CHECK(start_field(R"({"name": "x", "id": 5})") == "id");
  CHECK(start_field(R"({"name": "x", "at": "now"})") == "at");
  CHECK(start_field(R"({"name": "x", "at": -1})") == "at");
  CHECK(start_field(R"({"name": "x", "at": 1e300})") == "at");
  CHECK(parse_phase_request(R"({"users": 3, "at": 100.25})").at == 100.25);
  CHECK(phase_field(R"({"users": 3, "at": null})") == "(accepted)");
  CHECK(parse_stop_request("").at == std::nullopt);
  CHECK(parse_stop_request(R"({"at": 7})").at == 7);
  CHECK_THROWS_AS(parse_stop_request(R"({"name": "x"})"), RunRequestError);
  // The book's clock judges the instant: a minute off at most.
  CHECK_NOTHROW(check_instant(1000 + kMaxRunClockOffsetSeconds, 1000));
  CHECK_THROWS_AS(check_instant(1000 + kMaxRunClockOffsetSeconds + 1, 1000), RunRequestError);
  CHECK_THROWS_AS(check_instant(1000 - kMaxRunClockOffsetSeconds - 1, 1000), RunRequestError);
}

TEST_CASE("the hosts of a run across loadwatches are names, capped and each once") {
  auto r = parse_start_request(R"({"name":"x","hosts":["sut-1","gen-1","10.0.0.3:9797"]})");
  CHECK(r.hosts == std::vector<std::string>{"sut-1", "gen-1", "10.0.0.3:9797"});
  CHECK(parse_start_request(R"({"name":"x","hosts":null})").hosts.empty());
  CHECK(start_field(R"({"name":"x","hosts":"sut-1"})") == "hosts");
  CHECK(start_field(R"({"name":"x","hosts":[1]})") == "hosts");
  CHECK(start_field(R"({"name":"x","hosts":[""]})") == "hosts");
  CHECK(start_field(R"({"name":"x","hosts":["a","a"]})") == "hosts");
  CHECK(start_field(R"({"name":"x","hosts":["a\u202eb"]})") == "hosts");
  CHECK(start_field(R"({"name":"x","hosts":[")" + std::string(129, 'h') + R"("]})") == "hosts");
  std::string many = R"({"name":"x","hosts":[)";
  for (std::size_t i = 0; i <= kMaxRunHosts; ++i)
    many += (i ? ",\"h" : "\"h") + std::to_string(i) + "\"";
  CHECK(start_field(many + "]}") == "hosts");
  CHECK(hosts_problem({"a", "b"}).empty());
}

TEST_CASE("a hosts body names the hosts, nothing else") {
  CHECK(parse_hosts_request(R"({"hosts":["gen-1","sut-1"]})").hosts ==
        std::vector<std::string>{"gen-1", "sut-1"});
  auto field = [](const std::string& body) -> std::string {
    try {
      parse_hosts_request(body);
    } catch (const RunRequestError& e) {
      return e.field();
    }
    return "(accepted)";
  };
  CHECK(field("{}") == "hosts");
  CHECK(field(R"({"hosts":["a","a"]})") == "hosts");
  CHECK(field(R"({"hosts":["a"],"name":"x"})") == "name");
  CHECK(field("[]") == "body");
}
