#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "flags.h"
#include "util/bounded_file.h"

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

TEST_CASE("an example config with targets, sources and tcp ports parses") {
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
  CHECK(c.targets[1].match.regex != nullptr);
  CHECK(c.targets[1].children);
  REQUIRE(c.sources.size() == 2);
  CHECK(c.sources[0].interval == std::chrono::seconds(5));
  CHECK(c.sources[1].url == "http://127.0.0.1:8089");       // trailing slash dropped
  CHECK(c.sources[1].interval == std::chrono::seconds(5));  // default
  CHECK(c.sources[1].timeout == std::chrono::seconds(2));
  CHECK(c.tcp.ports == std::vector<std::uint16_t>{3000, 2525});
}

TEST_CASE("a config that asks for nothing needs allow_empty") {
  // An empty or half-written file must not switch monitoring off.
  for (const char* text :
       {"", "# nothing\n", "targets: []\n", "tcp:\n", "tcp:\n  ports: []\n", "collectors:\n",
        "collectors: {}\n", "targets:\nsources:\n", "allow_empty: false\n"}) {
    CAPTURE(text);
    CHECK(error_of(text) ==
          "lw.yml: no targets and no sources (an empty or half-written file?); add "
          "`allow_empty: true` to run with host metrics only");
  }
  auto c = parse_config("allow_empty: true\ntcp:\n  ports: [80]\n", "lw.yml");
  CHECK(c.allow_empty);
  CHECK(c.targets.empty());
  CHECK(c.tcp.ports == std::vector<std::uint16_t>{80});
  CHECK(error_of("allow_empty: maybe\n") == "lw.yml:1:14: allow_empty must be true or false");
}

TEST_CASE("a config with only tcp ports or only collectors asks for something") {
  auto tcp = parse_config("tcp: {ports: [80, 443]}\n", "lw.yml");
  CHECK_FALSE(tcp.allow_empty);
  CHECK(tcp.targets.empty());
  CHECK(tcp.sources.empty());
  CHECK(tcp.tcp.ports == std::vector<std::uint16_t>{80, 443});
  auto collectors = parse_config("collectors:\n  conntrack: false\n", "lw.yml");
  CHECK(collectors.targets.empty());
  CHECK(collectors.collectors == std::map<std::string, bool>{{"conntrack", false}});
}

TEST_CASE("config errors name file:line:col") {
  SECTION("broken YAML") { CHECK(error_of("targets:\n  - name: [a\n").rfind("lw.yml:", 0) == 0); }
  SECTION("unknown top-level key") {
    CHECK(error_of("targets: []\ntargetz: []\n") ==
          "lw.yml:2:1: unknown key \"targetz\" in config (allowed: targets, sources, tcp, "
          "collectors, allow_empty)");
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
    CHECK(error_of("targets:\n  - {name: a, match: {pod: 1}}\n")
              .rfind("lw.yml:2:23: unknown key", 0) == 0);
    CHECK(error_of("targets:\n  - {name: a, match: {pid: abc}}\n") ==
          "lw.yml:2:28: invalid pid \"abc\"");
    CHECK(error_of("targets:\n  - {name: a, match: {comm: 'a-very-long-command-name'}}\n")
              .find("longer than 15") != std::string::npos);
  }
  SECTION("missing pieces") {
    CHECK(error_of("targets:\n  - {name: a}\n").find("needs match") != std::string::npos);
    CHECK(error_of("sources:\n  - {name: a, kind: locust}\n").find("needs url") !=
          std::string::npos);
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

TEST_CASE("sources take tls, basic_auth and bearer_token_file", "[config][tls]") {
  auto c = parse_config(R"(sources:
  - name: peer
    kind: prometheus
    url: 'https://10.0.0.5:9100'
    tls: {ca_file: ca.pem, cert_file: /pki/client.crt, key_file: client.key,
          server_name: peer.internal, insecure_skip_verify: false}
    basic_auth: {username: alice, password_file: secrets/pw}
  - name: tok
    kind: prometheus
    url: 'http://127.0.0.1:9100'
    bearer_token_file: /run/token
)",
                        "/etc/loadwatch/lw.yml");
  REQUIRE(c.sources.size() == 2);
  const auto& tls = c.sources[0].tls;
  CHECK(tls.ca_file == "/etc/loadwatch/ca.pem");  // relative to the config file
  CHECK(tls.cert_file == "/pki/client.crt");
  CHECK(tls.key_file == "/etc/loadwatch/client.key");
  CHECK(tls.server_name == "peer.internal");
  CHECK_FALSE(tls.insecure_skip_verify);
  CHECK(c.sources[0].auth.username == "alice");
  CHECK(c.sources[0].auth.password_file == "/etc/loadwatch/secrets/pw");
  CHECK(c.sources[0].auth.bearer_token_file.empty());
  // basic auth over plain http is allowed (loopback peers), as in Prometheus.
  CHECK(c.sources[1].auth.bearer_token_file == "/run/token");
  CHECK(c.sources[1].auth.username.empty());
  CHECK(c.sources[1].tls == TlsClientConfig{});
  CHECK(parse_config("sources:\n  - {name: a, kind: locust, url: 'https://h',"
                     " tls: {insecure_skip_verify: yes}}\n",
                     "lw.yml")
            .sources[0]
            .tls.insecure_skip_verify);
}

TEST_CASE("tls and auth errors name file:line:col", "[config][tls]") {
  const std::string https = "sources:\n  - name: p\n    kind: prometheus\n    url: 'https://h'\n";
  const std::string http = "sources:\n  - name: p\n    kind: prometheus\n    url: 'http://h'\n";
  SECTION("unknown keys") {
    CHECK(error_of(https + "    tls: {ca_file: a, cafile: b}\n") ==
          "lw.yml:5:23: unknown key \"cafile\" in tls (allowed: ca_file, cert_file, key_file, "
          "server_name, insecure_skip_verify)");
    CHECK(error_of(https + "    basic_auth: {username: u, password_file: p, realm: x}\n") ==
          "lw.yml:5:49: unknown key \"realm\" in basic_auth (allowed: username, password_file)");
    CHECK(error_of(https + "    tls_config: {ca_file: a}\n")
              .rfind("lw.yml:5:5: unknown key \"tls_config\" in source", 0) == 0);
  }
  SECTION("wrong types") {
    CHECK(error_of(https + "    tls: yes\n") == "lw.yml:5:10: tls must be a mapping");
    CHECK(error_of(https + "    tls: {insecure_skip_verify: maybe}\n") ==
          "lw.yml:5:33: tls insecure_skip_verify must be true or false");
    CHECK(error_of(https + "    tls: {ca_file: [a]}\n") ==
          "lw.yml:5:20: tls ca_file must be a string");
    CHECK(error_of(https + "    basic_auth: alice\n") ==
          "lw.yml:5:17: basic_auth must be a mapping");
    CHECK(error_of(https + "    bearer_token_file: {a: b}\n") ==
          "lw.yml:5:24: bearer_token_file must be a string");
    CHECK(error_of(https + "    bearer_token_file: ''\n") ==
          "lw.yml:5:24: bearer_token_file must not be empty");
    CHECK(error_of(https + "    tls: {server_name: 'a/b'}\n") ==
          "lw.yml:5:24: tls server_name must be a host name");
  }
  SECTION("cert_file and key_file come together") {
    CHECK(error_of(https + "    tls: {cert_file: c.pem}\n") ==
          "lw.yml:5:22: tls cert_file needs key_file");
    CHECK(error_of(https + "    tls: {key_file: k.pem}\n") ==
          "lw.yml:5:21: tls key_file needs cert_file");
  }
  SECTION("one kind of auth") {
    CHECK(error_of(https +
                   "    basic_auth: {username: u, password_file: p}\n    bearer_token_file: t\n") ==
          "lw.yml:6:24: bearer_token_file and basic_auth are mutually exclusive");
  }
  SECTION("basic_auth needs a username without ':' and a password file, not a password") {
    CHECK(error_of(https + "    basic_auth: {username: u}\n") ==
          "lw.yml:5:17: basic_auth needs password_file");
    CHECK(error_of(https + "    basic_auth: {password_file: p}\n") ==
          "lw.yml:5:17: basic_auth needs username");
    CHECK(error_of(https + "    basic_auth: {username: 'a:b', password_file: p}\n") ==
          "lw.yml:5:28: basic_auth username must be non-empty and without ':'");
    auto e = error_of(https + "    basic_auth: {username: u, password: hunter2}\n");
    CHECK(e == "lw.yml:5:41: basic_auth takes password_file, not an inline password");
    CHECK(e.find("hunter2") == std::string::npos);
  }
  SECTION("tls on an http:// url is an error, not ignored") {
    CHECK(error_of(http + "    tls: {ca_file: a}\n") ==
          "lw.yml:5:10: tls needs an https:// source url");
  }
}

TEST_CASE("duplicate keys are errors at the second one, in every mapping") {
  // yaml-cpp keeps the first and ignores the second: a second `targets:` would be dropped.
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\ntargets:\n  - {name: b, match: "
                 "{pid: 2}}\n") == "lw.yml:3:1: duplicate key \"targets\"");
  CHECK(error_of("targets:\n  - name: a\n    match: {pid: 1}\n    name: b\n") ==
        "lw.yml:4:5: duplicate key \"name\"");
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1, pid: 2}}\n") ==
        "lw.yml:2:31: duplicate key \"pid\"");
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\ncollectors: {tcp: true, 'tcp': "
                 "false}\n") == "lw.yml:3:25: duplicate key \"tcp\"");
  // The same key in two different mappings is fine.
  CHECK(parse_config("targets:\n  - {name: a, match: {pid: 1}}\n  - {name: b, match: {pid: 2}}\n",
                     "lw.yml")
            .targets.size() == 2);
}

TEST_CASE("keys must be scalars, and a file holds one document") {
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\n? [a, b]\n: c\n") ==
        "lw.yml:3:3: a mapping key must be a plain string");
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\n{x: 1}: 2\n")
            .find("a mapping key must be a plain string") != std::string::npos);
  CHECK(error_of("targets:\n  - {name: a, match: {pid: 1}}\n---\ntargets: []\n") ==
        "lw.yml:3:1: a second YAML document; one file holds one document");
  // Anchors and aliases are not expanded while checking: a "billion laughs" costs its size.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    laughs += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" +
              prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  CHECK(error_of(laughs).find("unknown key \"a\" in config") != std::string::npos);
}

TEST_CASE("cmdline: patterns are RE2: linear time, bounded size, file:line:col errors") {
  SECTION("a catastrophic backtracking pattern is accepted and cannot stall") {
    auto c = parse_config("targets:\n  - {name: a, match: {cmdline: '(a+)+$'}}\n", "lw.yml");
    REQUIRE(c.targets[0].match.regex);
  }
  SECTION("20,000 nested groups: refused by length, at the value") {
    std::string pattern = std::string(20000, '(') + "a" + std::string(20000, ')');
    auto e = error_of("targets:\n  - name: a\n    match: {cmdline: '" + pattern + "'}\n");
    CHECK(e == "lw.yml:3:22: cmdline regex is 40001 bytes, longer than the 4096 allowed");
  }
  SECTION("nesting within the length limit compiles") {
    std::string pattern = std::string(2000, '(') + "a" + std::string(2000, ')');
    CHECK_NOTHROW(make_selector("cmdline", pattern));
  }
  SECTION("a short pattern whose program is too large is refused") {
    std::string pattern;
    for (int i = 0; i < 300; ++i) pattern += "[a-z]{1000}";
    REQUIRE(pattern.size() <= kMaxSelectorPatternBytes);
    CHECK_THROWS_WITH(make_selector("cmdline", pattern), Catch::Contains("pattern too large"));
  }
  SECTION("ECMAScript-only syntax is an error that names RE2") {
    CHECK_THROWS_WITH(make_selector("cmdline", "(a)\\1"),
                      Catch::Contains("invalid escape sequence") && Catch::Contains("RE2 syntax"));
    CHECK_THROWS_WITH(make_selector("cmdline", "node(?=x)"), Catch::Contains("RE2 syntax"));
  }
}

TEST_CASE("cmdline: an unanchored search over bytes") {
  auto sel = make_selector("cmdline", "node .*server");
  const RE2& re = *sel.regex;
  CHECK(RE2::PartialMatch("/usr/bin/node /srv/app/server.js", re));  // search, not full match
  CHECK(RE2::PartialMatch("node \xff\xfe legacy server", re));       // any byte, not only UTF-8
  CHECK_FALSE(RE2::PartialMatch("node app.js", re));
  // UTF-8 in a pattern matches its bytes.
  CHECK(RE2::PartialMatch("jmeter -t 压测.jmx", *make_selector("cmdline", "压测\\.jmx").regex));
  // Linear: a pattern that backtracks exponentially elsewhere, on a 128 KiB text.
  auto bad = make_selector("cmdline", "(a+)+$");
  std::string text(128 << 10, 'a');
  text += '!';
  CHECK_FALSE(RE2::PartialMatch(text, *bad.regex));
}

TEST_CASE("--source builds the value, not YAML text") {
  Options o;
  o.sources = {"q=prometheus,http://127.0.0.1:9/m?q='x'",
               "inj=locust,http://h/', interval: 1ms, x: '", "brace=prometheus,http://h/{a: b}"};
  Config c;
  merge_flag_targets(c, o);
  REQUIRE(c.sources.size() == 3);
  CHECK(c.sources[0].url == "http://127.0.0.1:9/m?q='x'");
  CHECK(c.sources[1].url == "http://h/', interval: 1ms, x: '");
  CHECK(c.sources[1].interval == std::chrono::seconds(5));  // the default, not 1ms
  CHECK(c.sources[2].url == "http://h/{a: b}");
  Options empty_name;
  empty_name.sources = {"=locust,http://h"};
  CHECK_THROWS_WITH(merge_flag_targets(c, empty_name), Catch::Contains("want NAME=KIND,URL"));
  Options bad_url;
  bad_url.sources = {"x=locust,ftp://h"};
  CHECK_THROWS_WITH(merge_flag_targets(c, bad_url),
                    "--source=x=locust,ftp://h: source url must start with http:// or https://");
}

TEST_CASE("--target builds the selector from its value") {
  Options o;
  o.targets = {"a=cmdline:x', children: false", "b=pidfile:/run/it's.pid"};
  Config c;
  merge_flag_targets(c, o);
  REQUIRE(c.targets.size() == 2);
  CHECK(c.targets[0].match.value == "x', children: false");
  CHECK(c.targets[0].children);
  CHECK(c.targets[1].match.value == "/run/it's.pid");
}

TEST_CASE("load_config reads a regular file only, at most the cap, and never blocks") {
  char tmpl[] = "/tmp/lw-config-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  auto error = [](const std::string& path) {
    try {
      load_config(path);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error(dir) == dir + ": cannot read config: is a directory, not a regular file");
  const std::string fifo = dir + "/fifo.yml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error(fifo) == fifo + ": cannot read config: is a FIFO, not a regular file");
  const std::string zero = dir + "/zero.yml";
  REQUIRE(::symlink("/dev/zero", zero.c_str()) == 0);
  CHECK(error(zero) == zero + ": cannot read config: is a character device, not a regular file");
  const std::string big = dir + "/big.yml";
  std::ofstream(big) << "# " << std::string(kMaxConfigFileBytes, 'x') << "\n";
  CHECK(error(big) == big + ": cannot read config: is larger than " +
                          std::to_string(kMaxConfigFileBytes) + " bytes");
  // A symlink to a regular file is followed (/etc/... links into a ConfigMap).
  const std::string real = dir + "/real.yml";
  std::ofstream(real) << "targets:\n  - {name: a, match: {pid: 1}}\n";
  REQUIRE(::symlink(real.c_str(), (dir + "/link.yml").c_str()) == 0);
  CHECK(load_config(dir + "/link.yml").targets.size() == 1);
  std::ofstream(dir + "/empty.yml").flush();
  CHECK(error(dir + "/empty.yml") ==
        dir +
            "/empty.yml: no targets and no sources (an empty or half-written file?); add "
            "`allow_empty: true` to run with host metrics only");
  std::filesystem::remove_all(dir);
}
