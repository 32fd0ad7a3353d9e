#include <catch2/catch.hpp>

#include "config.h"
#include "flags.h"

using namespace loadwatch;

namespace {
std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "lw.yml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("the PRODUCT.md example config parses") {
  auto c = parse_config(R"(targets:
  - name: mock
    match: {port: 2525}
  - name: app
    match: {cmdline: 'egg-cluster'}
    children: true
sources:
  - {name: mb, kind: mountebank, url: 'http://127.0.0.1:2525', interval: 5s, timeout: 2s}
  - {name: locust, kind: locust, url: 'http://127.0.0.1:8089/'}
tcp:
  ports: [3000, 2525]
)",
                        "lw.yml");
  REQUIRE(c.targets.size() == 2);
  CHECK(c.targets[0].name == "mock");
  CHECK(c.targets[0].match.kind == Selector::Kind::Port);
  CHECK(c.targets[0].match.text() == "port:2525");
  CHECK(c.targets[1].match.regex.has_value());
  CHECK(c.targets[1].children);
  REQUIRE(c.sources.size() == 2);
  CHECK(c.sources[0].interval == std::chrono::seconds(5));
  CHECK(c.sources[1].url == "http://127.0.0.1:8089");  // trailing slash dropped
  CHECK(c.sources[1].interval == std::chrono::seconds(5));  // default
  CHECK(c.sources[1].timeout == std::chrono::seconds(2));
  CHECK(c.tcp.ports == std::vector<std::uint16_t>{3000, 2525});
}

TEST_CASE("an empty config is valid") {
  CHECK(parse_config("", "lw.yml").targets.empty());
  CHECK(parse_config("# nothing\n", "lw.yml").sources.empty());
}

TEST_CASE("config errors name file:line:col") {
  SECTION("broken YAML") {
    CHECK(error_of("targets:\n  - name: [a\n").rfind("lw.yml:", 0) == 0);
  }
  SECTION("unknown top-level key") {
    CHECK(error_of("targets: []\ntargetz: []\n") ==
          "lw.yml:2:1: unknown key \"targetz\" in config (allowed: targets, sources, tcp, "
          "collectors)");
  }
  SECTION("unknown key in a target") {
    CHECK(error_of("targets:\n  - name: a\n    match: {pid: 1}\n    kids: true\n")
              .rfind("lw.yml:4:5: unknown key \"kids\" in target", 0) == 0);
  }
  SECTION("wrong type") {
    CHECK(error_of("targets:\n  - name: a\n    match: {pid: 1}\n    children: maybe\n") ==
          "lw.yml:4:15: children must be true or false");
    CHECK(error_of("tcp:\n  ports: [80, http]\n") == "lw.yml:2:15: port must be an integer");
    CHECK(error_of("tcp:\n  ports: [70000]\n") == "lw.yml:2:11: port must be between 1 and 65535");
  }
  SECTION("invalid regex") {
    auto e = error_of("targets:\n  - name: a\n    match: {cmdline: 'node(['}\n");
    CHECK(e.rfind("lw.yml:3:22: invalid cmdline regex \"node([\"", 0) == 0);
  }
  SECTION("duplicate target names") {
    CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\n  - {name: a, match: {pid: 2}}\n") ==
          "lw.yml:3:12: duplicate target name \"a\"");
  }
  SECTION("bad duration") {
    CHECK(error_of("sources:\n  - {name: m, kind: locust, url: 'http://x', interval: 5 s}\n") ==
          "lw.yml:2:56: interval: not a valid duration string: \"5 s\"");
  }
  SECTION("bad selector") {
    CHECK(error_of("targets:\n  - {name: a, match: {pod: 1}}\n").rfind("lw.yml:2:23: unknown key", 0) == 0);
    CHECK(error_of("targets:\n  - {name: a, match: {pid: abc}}\n") ==
          "lw.yml:2:28: invalid pid \"abc\"");
    CHECK(error_of("targets:\n  - {name: a, match: {comm: 'a-very-long-command-name'}}\n")
              .find("longer than 15") != std::string::npos);
  }
  SECTION("missing pieces") {
    CHECK(error_of("targets:\n  - {name: a}\n").find("needs match") != std::string::npos);
    CHECK(error_of("sources:\n  - {name: a, kind: locust}\n").find("needs url") != std::string::npos);
    CHECK(error_of("sources:\n  - {name: a, kind: k6, url: 'http://x'}\n")
              .find("unknown source kind \"k6\"") != std::string::npos);
  }
}

TEST_CASE("an unreadable config file is a ConfigError naming the file") {
  CHECK_THROWS_WITH(load_config("/nonexistent/lw.yml"),
                    Catch::Contains("/nonexistent/lw.yml: cannot read config"));
}

TEST_CASE("selectors") {
  CHECK(parse_selector("pid:1234").kind == Selector::Kind::Pid);
  CHECK(parse_selector("pidfile:/run/mb.pid").value == "/run/mb.pid");
  CHECK(parse_selector("exe:/usr/bin/node").kind == Selector::Kind::Exe);
  CHECK(parse_selector("cmdline:a:b").value == "a:b");  // only the first colon splits
  CHECK(parse_selector("unit:mountebank.service").kind == Selector::Kind::Unit);
  CHECK_THROWS_AS(parse_selector("port:0"), std::invalid_argument);
  CHECK_THROWS_AS(parse_selector("port:65536"), std::invalid_argument);
  CHECK_THROWS_AS(parse_selector("node"), std::invalid_argument);
  CHECK_THROWS_AS(parse_selector("pid:"), std::invalid_argument);
}

TEST_CASE("durations follow Prometheus") {
  using std::chrono::milliseconds;
  CHECK(parse_duration("500ms") == milliseconds(500));
  CHECK(parse_duration("1s") == milliseconds(1000));
  CHECK(parse_duration("2m") == milliseconds(120000));
  CHECK(parse_duration("1h30m") == milliseconds(5400000));
  CHECK(parse_duration("0") == milliseconds(0));
  for (const char* bad : {"", "1", "s", "1x", "-1s", "1.5s", "1s ", "99999999999999999999s"}) {
    CHECK_THROWS_AS(parse_duration(bad), std::invalid_argument);
  }
}

TEST_CASE("quick-form flags merge into the config") {
  Options o;
  o.targets = {"mb=port:2525", "app=cmdline:node .*"};
  o.sources = {"lc=locust,http://127.0.0.1:8089"};
  Config c;
  merge_flag_targets(c, o);
  REQUIRE(c.targets.size() == 2);
  CHECK(c.targets[1].match.value == "node .*");
  REQUIRE(c.sources.size() == 1);
  CHECK(c.sources[0].kind == "locust");
  CHECK(c.sources[0].url == "http://127.0.0.1:8089");

  Options dup;
  dup.targets = {"a=pid:1", "a=pid:2"};
  Config c2;
  CHECK_THROWS_WITH(merge_flag_targets(c2, dup), "--target=a=pid:2: duplicate target name \"a\"");
  Options bad;
  bad.sources = {"x=k6,http://h"};
  Config c3;
  CHECK_THROWS_WITH(merge_flag_targets(c3, bad), Catch::Contains("unknown source kind \"k6\""));
  Options noeq;
  noeq.targets = {"pid:1"};
  Config c4;
  CHECK_THROWS_WITH(merge_flag_targets(c4, noeq), Catch::Contains("want NAME=KIND:VALUE"));
}
