#include <catch2/catch.hpp>

#include "analysis/compare.h"
#include "analysis/junit.h"

using namespace loadwatch::analysis;

namespace {

PhaseStats phase(const std::string& name, std::optional<std::int64_t> users, double rps, double p95,
                 double errors) {
  PhaseStats p;
  p.name = name;
  p.users = users;
  p.rps = rps;
  p.p95_seconds = p95;
  p.error_ratio = errors;
  return p;
}

CapacityReport report(std::vector<PhaseStats> phases) {
  CapacityReport r;
  r.phases = std::move(phases);
  return r;
}

}  // namespace

TEST_CASE("rules parse with their units and natural directions") {
  Rule r = parse_rule(Bound::max, "p95=+20%");
  CHECK(r.metric == Metric::p95);
  CHECK(r.change == Change::relative);
  CHECK(r.amount == 20);
  CHECK(r.limit(0.100) == Approx(0.120));
  CHECK(r.describe() == "p95 <= base +20%");

  r = parse_rule(Bound::min, "rps=-10%");
  CHECK(r.limit(1000) == Approx(900));
  CHECK(r.describe() == "rps >= base -10%");
  // Unsigned: the usual direction of the bound.
  CHECK(parse_rule(Bound::min, "rps=10%").limit(1000) == Approx(900));
  CHECK(parse_rule(Bound::max, "p99=10%").limit(1.0) == Approx(1.1));
  // A signed value is taken as written: throughput must improve by 5 %.
  CHECK(parse_rule(Bound::min, "rps=+5%").limit(1000) == Approx(1050));

  r = parse_rule(Bound::max, "error_ratio=+0.5pp");
  CHECK(r.change == Change::points);
  CHECK(r.limit(0.01) == Approx(0.015));
  CHECK(r.describe() == "error_ratio <= base +0.5pp");

  r = parse_rule(Bound::max, "p95=+30ms");
  CHECK(r.change == Change::absolute);
  CHECK(r.limit(0.100) == Approx(0.130));
  CHECK(r.describe() == "p95 <= base +30ms");
  CHECK(parse_rule(Bound::max, "p50=+1s").limit(0.5) == Approx(1.5));
  CHECK(parse_rule(Bound::max, "p50=+500us").limit(0) == Approx(0.0005));
  CHECK(parse_rule(Bound::min, "rps=-50").limit(1000) == Approx(950));
}

TEST_CASE("bad rules are refused with the reason") {
  auto reason = [](Bound b, const char* spec) {
    try {
      parse_rule(b, spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(reason(Bound::max, "p95"), Catch::Contains("METRIC=CHANGE"));
  CHECK_THAT(reason(Bound::max, "p90=+20%"), Catch::Contains("unknown metric"));
  CHECK_THAT(reason(Bound::max, "p95=+0.5pp"), Catch::Contains("error_ratio"));
  CHECK_THAT(reason(Bound::min, "rps=+20ms"), Catch::Contains("time unit"));
  CHECK_THAT(reason(Bound::max, "p95=abc"), Catch::Contains("not a number"));
  CHECK_THAT(reason(Bound::max, "p95="), Catch::Contains("not a number"));
  CHECK_THAT(reason(Bound::max, "p95=+-5%"), Catch::Contains("sign"));
  CHECK_THAT(reason(Bound::max, "p95=+20%%"), Catch::Contains("not a number"));
  CHECK_THAT(reason(Bound::min, "rps=-100%"), Catch::Contains("-100%"));
  CHECK_THAT(reason(Bound::max, "p95=+inf%"), Catch::Contains("not a number"));
}

TEST_CASE("the default rule is p95 at most 20 % above the baseline") {
  auto rules = default_rules();
  REQUIRE(rules.size() == 1);
  CHECK(rules[0].describe() == "p95 <= base +20%");
}

TEST_CASE("a run 30 % slower is a regression; the same run passes") {
  CapacityReport base =
      report({phase("50", 50, 1000, 0.100, 0), phase("100", 100, 1500, 0.150, 0)});
  CapacityReport slower = base;
  for (auto& p : slower.phases) *p.p95_seconds *= 1.3;
  Comparison c = compare_reports(base, slower, default_rules());
  CHECK(c.exit_code() == 1);
  REQUIRE(c.phases.size() == 2);
  CHECK(c.phases[0].results[0].verdict == Verdict::regression);
  CHECK(*c.phases[0].results[0].limit == Approx(0.120));
  CHECK_THAT(c.phases[0].results[0].message, Catch::Contains("above the limit"));

  CHECK(compare_reports(base, base, default_rules()).exit_code() == 0);
  // 19 % slower is within the limit.
  CapacityReport close = base;
  for (auto& p : close.phases) *p.p95_seconds *= 1.19;
  CHECK(compare_reports(base, close, default_rules()).exit_code() == 0);
}

TEST_CASE("every rule is judged, and each on its own bound") {
  CapacityReport base = report({phase("50", 50, 1000, 0.100, 0.001)});
  std::vector<Rule> rules = {parse_rule(Bound::max, "p95=+20%"),
                             parse_rule(Bound::max, "error_ratio=+0.5pp"),
                             parse_rule(Bound::min, "rps=-10%")};
  CapacityReport cur = report({phase("50", 50, 850, 0.110, 0.004)});
  Comparison c = compare_reports(base, cur, rules);
  REQUIRE(c.phases[0].results.size() == 3);
  CHECK(c.phases[0].results[0].verdict == Verdict::ok);
  CHECK(c.phases[0].results[1].verdict == Verdict::ok);          // +0.3pp
  CHECK(c.phases[0].results[2].verdict == Verdict::regression);  // -15 %
  CHECK(c.exit_code() == 1);
  cur.phases[0].error_ratio = 0.0065;
  cur.phases[0].rps = 950;
  c = compare_reports(base, cur, rules);
  CHECK(c.phases[0].results[1].verdict == Verdict::regression);  // +0.55pp
  CHECK(c.phases[0].results[2].verdict == Verdict::ok);
}

TEST_CASE("phases are matched by user count first, then by name") {
  CapacityReport base = report({phase("warm", std::nullopt, 10, 0.1, 0),
                                phase("s1", 50, 100, 0.1, 0), phase("s2", 100, 200, 0.2, 0)});
  // The current run names its steps differently and lists them in another order.
  CapacityReport cur =
      report({phase("step-100", 100, 200, 0.2, 0), phase("step-50", 50, 100, 0.1, 0),
              phase("warm", std::nullopt, 10, 0.1, 0), phase("extra", 150, 1, 1, 0)});
  Comparison c = compare_reports(base, cur, default_rules());
  REQUIRE(c.phases.size() == 3);
  CHECK(c.phases[0].current_phase == "warm");
  CHECK(c.phases[0].matched_by == "name");
  CHECK(c.phases[1].current_phase == "step-50");
  CHECK(c.phases[1].matched_by == "users");
  CHECK(c.phases[2].current_phase == "step-100");
  CHECK(c.unmatched_current == std::vector<std::string>{"extra"});
  CHECK(c.exit_code() == 0);  // an extra phase is reported, not judged
}

TEST_CASE("repeated user counts (ramp up and down) pair in order") {
  CapacityReport base = report({phase("up", 50, 100, 0.1, 0), phase("down", 50, 90, 0.2, 0)});
  CapacityReport cur = report({phase("a", 50, 100, 0.1, 0), phase("b", 50, 90, 0.2, 0)});
  Comparison c = compare_reports(base, cur, default_rules());
  CHECK(c.phases[0].current_phase == "a");
  CHECK(c.phases[1].current_phase == "b");
  CHECK(c.exit_code() == 0);
}

TEST_CASE("phases at 0 users (a generator's drain) are listed and never judged") {
  // The drain holds only cut-off requests: its p95 and rate say nothing about the build.
  CapacityReport base = report({phase("users=4", 4, 100, 0.1, 0), phase("users=0", 0, 3, 0.1, 0)});
  CapacityReport cur = report({phase("users=4", 4, 100, 0.1, 0), phase("users=0", 0, 1, 9.0, 0.5)});
  Comparison c = compare_reports(base, cur, default_rules());
  REQUIRE(c.phases.size() == 1);
  CHECK(c.phases[0].base_phase == "users=4");
  CHECK(c.idle_phases == std::vector<std::string>{"users=0"});
  CHECK(c.unmatched_current.empty());
  CHECK(c.exit_code() == 0);

  // The same run without its drain, against a baseline with one: still a full comparison.
  CHECK(compare_reports(base, report({phase("users=4", 4, 100, 0.1, 0)}), default_rules())
            .exit_code() == 0);
  // A current run that has only the drain where the baseline had load: incomplete.
  CHECK(compare_reports(base, report({phase("users=0", 0, 1, 0.1, 0)}), default_rules())
            .exit_code() == 2);
  // A baseline with nothing but idle phases gates nothing: bad input, not a pass.
  Comparison idle_only =
      compare_reports(report({phase("users=0", 0, 3, 0.1, 0)}), cur, default_rules());
  CHECK(idle_only.phases.empty());
  CHECK(idle_only.exit_code() == 2);
}

TEST_CASE("a missing phase or figure makes the comparison incomplete: exit 2") {
  CapacityReport base = report({phase("50", 50, 100, 0.1, 0), phase("100", 100, 150, 0.2, 0)});
  CapacityReport cur = report({phase("50", 50, 100, 0.1, 0)});
  Comparison c = compare_reports(base, cur, default_rules());
  CHECK_FALSE(c.phases[1].current_phase);
  CHECK(c.exit_code() == 2);

  cur = base;
  cur.phases[1].p95_seconds.reset();
  c = compare_reports(base, cur, default_rules());
  CHECK(c.phases[1].results[0].verdict == Verdict::no_data);
  CHECK_THAT(c.phases[1].results[0].message, Catch::Contains("current run"));
  CHECK(c.exit_code() == 2);

  // Incomplete wins over a regression elsewhere: the gate did not see everything.
  *cur.phases[0].p95_seconds *= 2;
  CHECK(compare_reports(base, cur, default_rules()).exit_code() == 2);

  CHECK(compare_reports(report({}), base, default_rules()).exit_code() == 2);
}

TEST_CASE("JUnit XML counts one testcase per phase and rule") {
  CapacityReport base = report({phase("50", 50, 100, 0.1, 0), phase("100", 100, 150, 0.2, 0),
                                phase("150 <&>", 150, 150, 0.3, 0)});
  CapacityReport cur = report({phase("50", 50, 100, 0.1, 0), phase("100", 100, 150, 0.3, 0)});
  std::vector<Rule> rules = {parse_rule(Bound::max, "p95=+20%"),
                             parse_rule(Bound::min, "rps=-10%")};
  std::string xml = junit_xml(compare_reports(base, cur, rules), "gate \"x\"");
  CHECK_THAT(xml, Catch::StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
  CHECK_THAT(xml, Catch::Contains("tests=\"5\" failures=\"1\" errors=\"1\""));
  CHECK_THAT(xml, Catch::Contains("name=\"gate &quot;x&quot;\""));
  CHECK_THAT(xml, Catch::Contains("phase 150 &lt;&amp;&gt; (150 users)"));
  CHECK_THAT(xml, Catch::Contains("<failure type=\"regression\""));
  CHECK_THAT(xml, Catch::Contains("name=\"p95 &lt;= base +20%\""));
}

namespace {

PhaseStats bounded(const std::string& name, double rps, double low, double high) {
  PhaseStats p = phase(name, std::stoll(name), rps, 0.1, 0);
  p.rps_low = low;
  p.rps_high = high;
  return p;
}

}  // namespace

TEST_CASE("a difference within the combined uncertainty is within noise, not a regression") {
  std::vector<Rule> rules = {parse_rule(Bound::min, "rps=-10%")};
  // 880 is below the limit 900, but the bounds (±45 and ±44) leave room for no change at all.
  Comparison c = compare_reports(report({bounded("10", 1000, 955, 1045)}),
                                 report({bounded("10", 880, 836, 924)}), rules);
  REQUIRE(c.phases[0].results.size() == 1);
  const RuleResult& r = c.phases[0].results[0];
  CHECK(r.verdict == Verdict::within_noise);
  CHECK(*r.uncertainty == Approx(44 + 0.9 * 45));
  CHECK_THAT(r.message, Catch::Contains("by less than the combined uncertainty"));
  CHECK(c.exit_code() == 0);
  // Beyond the bounds it is a regression, bounds or not.
  c = compare_reports(report({bounded("10", 1000, 990, 1010)}),
                      report({bounded("10", 800, 790, 810)}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::regression);
  CHECK(c.exit_code() == 1);
}

TEST_CASE("uncertainty larger than the rule's margin is inconclusive: exit 0, or 3 if asked") {
  std::vector<Rule> rules = {parse_rule(Bound::min, "rps=-10%")};
  Comparison c = compare_reports(report({bounded("10", 1000, 900, 1100)}),
                                 report({bounded("10", 1000, 850, 1150)}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::inconclusive);
  CHECK(c.inconclusive());
  CHECK(c.exit_code() == 0);
  CHECK(c.exit_code(true) == 3);
  std::string xml = junit_xml(c, "gate");
  CHECK_THAT(xml, Catch::Contains("skipped=\"1\""));
  CHECK_THAT(xml, Catch::Contains("<skipped message=\"inconclusive: "));
  // A rate left out as too coarse is inconclusive too; one missing without a reason is not.
  PhaseStats coarse = phase("10", 10, 0, 0.1, 0);
  coarse.rps.reset();
  coarse.rps_unavailable = "1 counter update in 7 s: a rate needs two";
  c = compare_reports(report({bounded("10", 1000, 990, 1010)}), report({coarse}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::inconclusive);
  CHECK_THAT(c.phases[0].results[0].message, Catch::Contains("1 counter update in 7 s"));
  CHECK(c.exit_code() == 0);
  coarse.rps_unavailable.clear();
  c = compare_reports(report({bounded("10", 1000, 990, 1010)}), report({coarse}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::no_data);
  CHECK(c.exit_code() == 2);
  // The listener's p95 without a rate (no span to read the histogram over) is as coarse.
  std::vector<Rule> p95 = {parse_rule(Bound::max, "p95=+20%")};
  coarse.p95_seconds.reset();
  coarse.rps_unavailable = "1 counter update in 2 s: a rate needs two";
  coarse.latency_unavailable =
      "the latency histogram is read between ...: " + coarse.rps_unavailable;
  c = compare_reports(report({phase("10", 10, 1000, 0.1, 0)}), report({coarse}), p95);
  CHECK(c.phases[0].results[0].verdict == Verdict::inconclusive);
  CHECK_THAT(c.phases[0].results[0].message, Catch::Contains("1 counter update in 2 s"));
  // A latency the generator never reported is missing data, not coarse.
  coarse.rps = 1000;
  coarse.rps_unavailable.clear();
  coarse.latency_unavailable = "the generator reported no latency quantile in the stable window";
  c = compare_reports(report({phase("10", 10, 1000, 0.1, 0)}), report({coarse}), p95);
  CHECK(c.phases[0].results[0].verdict == Verdict::no_data);
  CHECK(c.exit_code() == 2);
}

TEST_CASE("a latency measured differently in the two runs is inconclusive, not judged") {
  // Two watchers of one run: the listener's merged histogram (181 ms over the stable window)
  // and Locust's rolling 10 s quantile (120 ms): different windows, not a regression.
  PhaseStats rolling = phase("2", 2, 19, 0.120, 0), merged = phase("2", 2, 19, 0.181, 0);
  rolling.latency_method = "generator";
  merged.latency_method = "histogram";
  std::vector<Rule> rules = {parse_rule(Bound::max, "p95=+20%")};
  Comparison c = compare_reports(report({rolling}), report({merged}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::inconclusive);
  CHECK_THAT(c.phases[0].results[0].message, Catch::Contains("measured differently"));
  CHECK(c.exit_code() == 0);
  // Measured the same way, the difference is judged.
  rolling.latency_method = "histogram";
  c = compare_reports(report({rolling}), report({merged}), rules);
  CHECK(c.phases[0].results[0].verdict == Verdict::regression);
}

TEST_CASE("an rps rule without a unit warns; % and /s say what they mean") {
  Rule r = parse_rule(Bound::min, "rps=-10");
  CHECK(r.limit(1000) == Approx(990));
  CHECK_THAT(r.warning, Catch::Contains("rps=-10%"));
  CHECK_THAT(r.warning, Catch::Contains("rps=-10/s"));
  r = parse_rule(Bound::min, "rps=-10/s");
  CHECK(r.warning.empty());
  CHECK(r.limit(1000) == Approx(990));
  CHECK(r.describe() == "rps >= base -10/s");
  CHECK(parse_rule(Bound::min, "rps=-10%").warning.empty());
  CHECK(parse_rule(Bound::max, "p95=+30ms").warning.empty());
  CHECK_FALSE(parse_rule(Bound::max, "p95=+0.03").warning.empty());
  CHECK_THROWS_WITH(parse_rule(Bound::max, "p95=+3/s"), Catch::Contains("/s"));
}
