#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/capacity_csv.h"
#include "analysis/capacity_report.h"
#include "analysis/render.h"
#include "analysis/report_loader.h"

using namespace loadwatch::analysis;

namespace {

/// A phase with every field set, so a round trip proves each one is written and read.
PhaseStats full_phase() {
  PhaseStats p;
  p.name = "step 3";
  p.users = 150;
  p.start = 1700000000.5;
  p.end = 1700000180.5;
  p.duration_seconds = 180;
  p.stable_start = 1700000036.5;
  p.stable_seconds = 144;
  p.warmup_rule = "first 20% of the phase, at least 30 s, at most 50%";
  p.rps = 1234.5;
  p.rps_low = 1230;
  p.rps_high = 1240;
  p.rps_window_start = 1700000037;
  p.rps_window_end = 1700000180;
  p.rps_method = "counter rise between its first and last change";
  p.p50_seconds = 0.012;
  p.p95_seconds = 0.045;
  p.p99_seconds = 0.090;
  p.p50_low_seconds = 0.01;
  p.p50_high_seconds = 0.015;
  p.p95_low_seconds = 0.04;
  p.p95_high_seconds = 0.05;
  p.p99_low_seconds = 0.08;
  p.p99_high_seconds = 0.1;
  p.latency_method = "histogram";
  p.latency_window = "merged histogram buckets";
  p.error_ratio = 0.0025;
  TargetPhaseStats app{"app", 1.9, 0.97, 2.0, 100e6, 120e6, 1234.5, 900, 1024, 0.1, 0.05, 0};
  TargetPhaseStats gen{"locust", 0.4, 0.4, std::nullopt, 50e6, 51e6, -3.0, 30, 65536, {}, {}, {}};
  p.targets = {app, gen};
  p.host.cores = 2;
  p.host.cpu_cores_by_mode = {{"user", 1.2}, {"system", 0.4}, {"iowait", 0.01}};
  p.host.softirq_cores = 0.15;
  p.host.time_wait_max = 2500;
  p.host.time_wait_limit = 8192;
  p.host.listen_overflows = 12;
  p.host.ephemeral_port_ratio_max = 0.08;
  p.host.sample_gap_seconds = 17.1;
  p.generator_target = "locust";
  p.mock.p95_seconds = 0.004;
  p.mock.error_ratio = 0.001;
  return p;
}

CapacityReport sample_report() {
  CapacityReport r;
  r.run = RunInfo{"r-42", "checkout", {{"build", "1234"}}, 1700000000, 1700001000, "finished"};
  for (int i = 1; i <= 6; ++i) {
    PhaseStats p = full_phase();
    p.name = "step " + std::to_string(i);
    p.users = 25 * i;
    p.rps = 20.0 * std::min(25 * i, 100);
    p.rps_low = *p.rps * 0.99;
    p.rps_high = *p.rps * 1.01;
    p.p95_seconds = 0.05 * std::max(1.0, 25.0 * i / 100);
    r.phases.push_back(p);
  }
  analyse(r);
  return r;
}

std::string load_error(const std::string& text) {
  try {
    report_from_json(text);
  } catch (const ReportLoadError& e) {
    return e.what();
  }
  return "loaded";
}

}  // namespace

TEST_CASE("PhaseStats round-trips through JSON, every field") {
  PhaseStats p = full_phase();
  nlohmann::ordered_json written = p;
  nlohmann::json reread = nlohmann::json::parse(written.dump());
  CHECK(reread.get<PhaseStats>() == p);
  CHECK(written.begin().key() == "name");  // reading order: name first
}

TEST_CASE("missing figures stay missing: absent in JSON, nullopt when read") {
  PhaseStats p;
  p.name = "only name";
  nlohmann::ordered_json j = p;
  CHECK(j.dump() == R"({"name":"only name"})");
  PhaseStats back = nlohmann::json::parse(j.dump()).get<PhaseStats>();
  CHECK(back == p);
  CHECK_FALSE(back.rps);
  // null reads as absent too.
  back = nlohmann::json::parse(R"({"name":"x","rps":null,"host":null})").get<PhaseStats>();
  CHECK_FALSE(back.rps);
}

TEST_CASE("a whole report round-trips, analysis included") {
  CapacityReport r = sample_report();
  REQUIRE(r.knee.phase);
  CHECK(*r.knee.phase->users == 100);
  std::string text = render_report_json(r);
  CapacityReport back = report_from_json(text);
  CHECK(back.run == r.run);
  CHECK(back.phases == r.phases);
  CHECK(back.knee == r.knee);
  CHECK(back.latency_knee == r.latency_knee);
  CHECK(back.bottleneck == r.bottleneck);
  CHECK(back.usl.fitted == r.usl.fitted);
  CHECK(render_report_json(back) == text);
}

TEST_CASE("a queueing finding's K range round-trips as value_low and value_high") {
  CapacityReport r = sample_report();
  r.bottleneck.result.findings.push_back({Check::queueing, "app", "K", 9.1, 1.5, 7.0, 12.3});
  std::string text = render_report_json(r);
  auto found = nlohmann::json::parse(text)["bottleneck"]["findings"].back();
  CHECK(found["value_low"] == 7.0);
  CHECK(found["value_high"] == 12.3);
  CapacityReport back = report_from_json(text);
  CHECK(back.bottleneck == r.bottleneck);
  CHECK(back.bottleneck.result.findings.back().value_high == 12.3);
}

TEST_CASE("too few phases for a knee: how many had a rate, and why the others had none") {
  CapacityReport r;
  for (int users : {1, 2, 4, 8}) {
    PhaseStats p;
    p.name = "users=" + std::to_string(users);
    p.users = users;
    if (users <= 2) {
      p.rps = 10.0 * users;
    } else {
      p.rps_unavailable = "1 counter update in 8 s: a rate needs two";
    }
    r.phases.push_back(p);
  }
  analyse(r);
  CHECK_FALSE(r.knee.phase);
  CHECK(r.knee.reason ==
        "too few phases: the knee needs three user counts with a throughput, 2 had one; left "
        "out: phase users=4 (4 users): no req/s (1 counter update in 8 s: a rate needs two); "
        "phase users=8 (8 users): no req/s (1 counter update in 8 s: a rate needs two)");
}

TEST_CASE("bad report JSON is refused with the field named") {
  CHECK_THAT(load_error("{"), Catch::Contains("not valid JSON"));
  CHECK_THAT(load_error("[]"), Catch::Contains("JSON object"));
  CHECK_THAT(load_error(R"({"phases":[]})"), Catch::Contains("format"));
  CHECK_THAT(load_error(R"({"format":"loadwatch-capacity-report","version":9,"phases":[]})"),
             Catch::Contains("version"));
  const std::string head = R"({"format":"loadwatch-capacity-report","version":1,)";
  CHECK_THAT(load_error(head + R"("x":1})"), Catch::Contains("phases: missing"));
  CHECK_THAT(load_error(head + R"("phases":[{"users":5}]})"), Catch::Contains("phases[0].name"));
  CHECK_THAT(load_error(head + R"("phases":[{"name":"a"},{"name":"b","rps":"fast"}]})"),
             Catch::Contains("phases[1].rps: expected a number"));
  CHECK_THAT(load_error(head + R"("phases":[{"name":"a","error_ratio":1.5}]})"),
             Catch::Contains("phases[0].error_ratio: must be 0..1"));
  // Clients on several local addresses each use the whole port range toward one destination.
  CHECK(load_error(head + R"("phases":[{"name":"a","host":{"ephemeral_port_ratio_max":1.7}}]})") ==
        "loaded");
  CHECK_THAT(load_error(head + R"("phases":[{"name":"a","users":2.5}]})"),
             Catch::Contains("phases[0].users: expected an integer"));
  CHECK_THAT(
      load_error(head + R"("phases":[{"name":"a","targets":[{"name":"t","cpu_cores":-1}]}]})"),
      Catch::Contains("phases[0].targets[0].cpu_cores: must not be negative"));
  CHECK_THAT(load_error(head + R"("phases":[{"name":"a","generator_target":"nope"}]})"),
             Catch::Contains("generator_target"));
  CHECK_THAT(load_error(head + R"("phases":[{"name":"a"}],"knee":{"phase_index":3}})"),
             Catch::Contains("knee.phase_index"));
  CHECK_THAT(
      load_error(head + R"("phases":[{"name":"a","host":{"cpu_cores_by_mode":{"user":"x"}}}]})"),
      Catch::Contains("phases[0].host.cpu_cores_by_mode.user"));
  // The minimum: a format, a version and phases.
  CHECK(load_error(head + R"("phases":[{"name":"a","users":1,"rps":2}]})") == "loaded");
}

TEST_CASE("the CSV of a wrk sweep (awk output: users rps latency_ms success_pct) reads") {
  const char* csv =
      "200 18021.52 11.08 100.00\n"
      "500 34540.18 14.47 100.00\n"
      "1000 47210.33 21.18 99.50\n";
  auto phases = read_capacity_csv(csv);
  REQUIRE(phases.size() == 3);
  CHECK(phases[0].name == "200");
  CHECK(*phases[0].users == 200);
  CHECK(*phases[0].rps == Approx(18021.52));
  CHECK(*phases[0].p95_seconds == Approx(0.01108));
  CHECK(*phases[0].error_ratio == 0);
  CHECK(*phases[2].error_ratio == Approx(0.005));
}

TEST_CASE("CSV headers name the columns, in any order, with units") {
  auto phases = read_capacity_csv(
      "# a comment\n"
      "qps,p99 (s),Concurrency,p95_ms,error_pct,p75\n"
      "100,0.5,10,120,1.5,99\n"
      "\n"
      "180,0.9,20,200,,99\n");
  REQUIRE(phases.size() == 2);
  CHECK(*phases[0].users == 10);
  CHECK(*phases[0].rps == 100);
  CHECK(*phases[0].p99_seconds == Approx(0.5));
  CHECK(*phases[0].p95_seconds == Approx(0.120));
  CHECK(*phases[0].error_ratio == Approx(0.015));
  CHECK_FALSE(phases[1].error_ratio);  // empty cell: not known

  phases = read_capacity_csv("users;rps;latency;errors\r\n5;50;50.78ms;0.01\r\n");
  CHECK(*phases[0].p95_seconds == Approx(0.05078));
  CHECK(*phases[0].error_ratio == Approx(0.01));
  phases = read_capacity_csv("users\trps\tp50_us\n5\t50\t830\n");
  CHECK(*phases[0].p50_seconds == Approx(0.00083));

  CsvOptions named;
  named.columns = {"users", "rps", "p95_ms", "error_pct"};
  phases = read_capacity_csv("5 50 10 2\n", named);
  CHECK(*phases[0].error_ratio == Approx(0.02));
}

TEST_CASE("bad CSV input names the line and the column") {
  auto error = [](const char* text) {
    try {
      read_capacity_csv(text);
    } catch (const CsvError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  CHECK_THAT(error(""), Catch::Contains("no data rows"));
  CHECK_THAT(error("# only\n\n"), Catch::Contains("no data rows"));
  CHECK_THAT(error("10 100\n20 abc\n"), Catch::Contains("line 2"));
  CHECK_THAT(error("10 100\n20 abc\n"), Catch::Contains("throughput"));
  CHECK_THAT(error("10.5 100\n"), Catch::Contains("whole number"));
  CHECK_THAT(error("users,rps,errors\n10,100,3\n"), Catch::Contains("error_pct"));
  CHECK_THAT(error("10 100 5 101\n"), Catch::Contains("0..100"));
  CHECK_THAT(error("a,b\n1,2\n"), Catch::Contains("no concurrency column"));
  CHECK_THAT(error("users,latency\n1,2\n"), Catch::Contains("no throughput column"));
  CHECK_THAT(error("users,rps,qps\n1,2,3\n"), Catch::Contains("mean the same thing"));
  CHECK_THAT(error("10\n"), Catch::Contains("line 1"));
  CHECK_THAT(error("10 -5\n"), Catch::Contains("throughput"));
}

TEST_CASE("the analysis takes the first phase of each user count, by users") {
  std::vector<PhaseStats> phases(5);
  const std::int64_t users[] = {10, 30, 20, 30, 0};
  for (int i = 0; i < 5; ++i) {
    phases[i].name = std::to_string(i);
    phases[i].users = users[i];
    phases[i].rps = 1;
  }
  CHECK(scaling_points(phases) == std::vector<std::size_t>{0, 2, 1});
}

TEST_CASE("the report names the knee, the fit and the bottleneck in every format") {
  CapacityReport r = sample_report();
  std::string table = render_report(r, Format::table);
  CHECK_THAT(table, Catch::Contains("Throughput knee: phase step 4 (100 users)"));
  CHECK_THAT(table, Catch::Contains("locust (generator)"));
  CHECK_THAT(table, Catch::Contains("softirq"));
  CHECK_THAT(table, Catch::Contains("What saturated first at the throughput knee"));
  std::string md = render_report(r, Format::markdown);
  CHECK_THAT(md, Catch::StartsWith("# Capacity report"));
  CHECK_THAT(md, Catch::Contains("| Phase | Users |"));
  CHECK_THAT(md, Catch::Contains("| --- | ---: |"));
  CHECK(nlohmann::json::parse(render_report(r, Format::json))["knee"]["users"] == 100);
}

TEST_CASE("the table and markdown show the host figures the verdict reads, no empty column") {
  CapacityReport r = sample_report();
  for (PhaseStats& p : r.phases) {
    p.host.cpu_busy_cores = 1.98;
    p.host.others_cpu_cores = 1.21;
    p.host.cpu_cores_by_mode["steal"] = 0.02;
    p.host.run_queue_mean = 3.5;
    p.host.cpu_pressure_ratio = 0.62;
    p.host.memory_pressure_ratio = 0.004;
    p.host.swap_in_pages_per_second = 12;
    p.targets[0].throttled_period_ratio = 0.4;
    p.host.top_cpu_cores = {{"make", 0.5}, {"hog", 1.2}};
  }
  analyse(r);
  for (Format f : {Format::table, Format::markdown}) {
    std::string text = render_report(r, f);
    for (const char* column : {"Busy", "Others", "steal", "Run queue", "CPU pressure",
                               "Busiest processes", "Memory pressure", "Swap in", "Throttled"}) {
      CHECK_THAT(text, Catch::Contains(column));
    }
    for (const char* figure :
         {"1.98", "1.21", "3.5", "62.00 %", "12/s", "40.00 %", "hog 1.20, make 0.50"}) {
      CHECK_THAT(text, Catch::Contains(figure));
    }
    // No phase has these: their columns are left out, not shown blank.
    for (const char* column : {"Swap out", "I/O pressure", "Memory stall", "nice"}) {
      CHECK_THAT(text, !Catch::Contains(column));
    }
  }
}

TEST_CASE("markdown and table output escape what names bring in") {
  CapacityReport r = sample_report();
  const std::string hostile = "a|b <b>x</b> `c` *d* [e](f) \\ g\nh\x1b[31mi\xc2\x9bj";
  r.run->name = hostile;
  for (auto& p : r.phases) p.name = hostile + " " + std::to_string(p.users.value_or(0));
  analyse(r);
  std::string md = render_report(r, Format::markdown);
  CHECK_THAT(md, !Catch::Contains("<b>"));
  CHECK_THAT(md, !Catch::Contains("`c`"));
  CHECK_THAT(md, !Catch::Contains("*d*"));
  CHECK_THAT(md, !Catch::Contains("\x1b"));
  CHECK_THAT(md, !Catch::Contains("\xc2\x9b"));
  CHECK_THAT(md, Catch::Contains("a\\|b &lt;b&gt;x&lt;/b&gt; \\`c\\` \\*d\\* \\[e\\](f) \\\\ g h"));
  // Every row of the phase table has as many cell boundaries as its header.
  std::istringstream lines(md);
  std::string l, header;
  int rows = 0;
  while (std::getline(lines, l)) {
    if (l.rfind("| Phase |", 0) == 0) header = l;
    if (header.empty() || l.rfind("| ", 0) != 0) continue;
    auto bars = [](const std::string& s) {
      int n = 0;
      for (std::size_t i = 0; i < s.size(); ++i) n += s[i] == '|' && (i == 0 || s[i - 1] != '\\');
      return n;
    };
    CHECK(bars(l) == bars(header));
    rows += l.find("a\\|b") != std::string::npos;
  }
  CHECK(rows >= 6);  // the phase table, and the tables after it that name phases
  std::string table = render_report(r, Format::table);
  CHECK_THAT(table, !Catch::Contains("\x1b"));
  CHECK_THAT(table, !Catch::Contains("\xc2\x9b"));
  CHECK_THAT(table, !Catch::Contains("g\nh"));
  CHECK_THAT(table, Catch::Contains("g h\xEF\xBF\xBD[31mi\xEF\xBF\xBDj 100"));
}

TEST_CASE("fewer than four phases: the USL section says so instead of numbers") {
  CapacityReport r = report_from_csv("10 100\n20 190\n30 250\n", "csv:x");
  CHECK_FALSE(r.usl.fitted);
  std::string table = render_report(r, Format::table);
  CHECK_THAT(table, Catch::Contains("No fit: too few phases"));
  CHECK_THAT(table, !Catch::Contains("α (contention) ="));
  auto j = nlohmann::json::parse(render_report(r, Format::json));
  CHECK(j["usl"]["fitted"] == false);
  CHECK_FALSE(j["usl"].contains("alpha"));
}

namespace {

/// Phases at `users` with throughput `rps` (each ±2 %), nothing else.
CapacityReport scaling(const std::vector<std::int64_t>& users, const std::vector<double>& rps) {
  CapacityReport r;
  for (std::size_t i = 0; i < users.size(); ++i) {
    PhaseStats p;
    p.name = std::to_string(users[i]);
    p.users = users[i];
    p.rps = rps[i];
    p.rps_low = rps[i] * 0.98;
    p.rps_high = rps[i] * 1.02;
    r.phases.push_back(p);
  }
  return r;
}

}  // namespace

TEST_CASE("throughput flat within the noise from the first step has no Kneedle knee") {
  // Flat within +-8 % from one user: Kneedle alone marks a knee on such noise.
  CapacityReport r = scaling({1, 2, 4, 8, 16}, {450, 486, 441, 478, 462});
  REQUIRE(kneedle({1, 2, 4, 8, 16}, {450, 486, 441, 478, 462}).knee);
  analyse(r);
  CHECK_FALSE(r.knee.phase);
  CHECK(r.knee.shape == "flat");
  CHECK_THAT(r.knee.reason, Catch::StartsWith("saturated from the first step"));
  CHECK_THAT(render_report(r, Format::table), Catch::Contains("saturated from the first step"));
}

TEST_CASE("a coarse source's wide bounds do not make a rising throughput flat") {
  // Locust scraped every 5 s: +-40 % bounds. 9.8 -> 19 req/s is a rise, whatever the bounds.
  CapacityReport r = scaling({1, 2, 4, 8}, {9.8, 19.0, 20.0, 20.3});
  for (PhaseStats& p : r.phases) {
    p.rps_low = *p.rps * 0.7;
    p.rps_high = *p.rps * 1.4;
  }
  analyse(r);
  CHECK(r.knee.shape.empty());
  REQUIRE(r.knee.phase);
  CHECK(r.phases[r.knee.phase->index].users == 2);
}

TEST_CASE("flat throughput with the generator's CPU saturated: the generator capped it") {
  CapacityReport r = scaling({1, 2, 4, 8, 16}, {450, 486, 441, 478, 462});
  for (PhaseStats& p : r.phases) {
    TargetPhaseStats gen;
    gen.name = "locust";
    gen.cpu_cores = 0.99;
    gen.busiest_process_core_share = 0.99;
    p.targets.push_back(gen);
    p.generator_target = "locust";
  }
  analyse(r);
  CHECK_FALSE(r.knee.phase);
  CHECK(r.knee.shape == "generator_capped");
  CHECK_THAT(r.knee.reason, Catch::StartsWith("flat: the generator capped it"));
}

TEST_CASE("a knee is marked where the data has one, even just above the flat tolerance") {
  CapacityReport r = scaling({1, 2, 4, 8, 16}, {100, 200, 390, 400, 405});
  analyse(r);
  REQUIRE(r.knee.phase);
  CHECK(r.knee.shape.empty());
  CHECK(*r.knee.phase->users == 4);
  // A rise of 15 % from the first step is no longer "flat".
  r = scaling({1, 2, 4, 8, 16}, {400, 460, 462, 461, 463});
  analyse(r);
  CHECK(r.knee.shape.empty());
}

TEST_CASE("a phase in which loadwatch took no sample for a while says so") {
  CapacityReport r = scaling({1, 2, 4}, {100, 200, 300});
  r.phases[1].host.sample_gap_seconds = 17.06;
  r.phases[2].host.sample_gap_seconds = 0;  // seen, none: no note
  analyse(r);
  for (Format f : {Format::table, Format::markdown}) {
    std::string text = render_report(r, f);
    CHECK_THAT(text, Catch::Contains("loadwatch took no sample for 17.1 s"));
    CHECK(text.find("no sample for") == text.rfind("no sample for"));  // one phase
  }
  CapacityReport back = report_from_json(render_report(r, Format::json));
  CHECK(*back.phases[1].host.sample_gap_seconds == Approx(17.06));
  CHECK(*back.phases[2].host.sample_gap_seconds == 0);
  CHECK_FALSE(back.phases[0].host.sample_gap_seconds);  // not known: left out, not 0
}

TEST_CASE("a phase without req/s is left out of the knee and the fit, never read as 0") {
  CapacityReport r = scaling({1, 2, 4, 8, 16, 32}, {100, 200, 390, 400, 405, 0});
  r.phases.back().rps.reset();
  r.phases.back().rps_low.reset();
  r.phases.back().rps_high.reset();
  r.phases.back().rps_unavailable = "1 counter update in 7 s: a rate needs two";
  analyse(r);
  REQUIRE(r.left_out_of_scaling.size() == 1);
  CHECK_THAT(r.left_out_of_scaling[0], Catch::Contains("1 counter update in 7 s"));
  CHECK(r.usl.points == 5);
  std::string table = render_report(r, Format::table);
  CHECK_THAT(table, Catch::Contains("Left out (also of the USL fit): phase 32"));
  CHECK_THAT(table, Catch::Contains("no req/s: 1 counter update in 7 s"));
  CHECK_THAT(table, Catch::Contains("RPS ±"));
  CHECK_THAT(table, Catch::Contains("±2.0 %"));
  CHECK_THAT(table, !Catch::Contains(" 0.00 "));
  std::string json = render_report(r, Format::json);
  CHECK_THAT(json, Catch::Contains("\"rps_unavailable\""));
  CHECK_THAT(json, Catch::Contains("\"left_out_of_scaling\""));
  CapacityReport back = report_from_json(json);
  CHECK(back.left_out_of_scaling == r.left_out_of_scaling);
  CHECK_FALSE(back.phases.back().rps);
}
