// Run ids, and the stored form read back field by field.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "runs/run.h"

using namespace loadwatch;

TEST_CASE("run ids are the UTC start second and a file-safe name") {
  // 2026-12-01T17:05:12Z
  CHECK(make_run_id(1796144712.9, "checkout") == "20261201T170512-checkout");
  CHECK(make_run_id(1796144712, "Check Out / v2!") == "20261201T170512-check-out-v2");
  CHECK(make_run_id(1796144712, "../../etc/passwd") == "20261201T170512-etc-passwd");
  CHECK(make_run_id(1796144712, "\xe6\xb5\x8b\xe8\xaf\x95") == "20261201T170512-run");
  CHECK(make_run_id(1796144712, "") == "20261201T170512-run");
  CHECK(make_run_id(1796144712, std::string(100, 'a')).size() == 16 + 48);
  // Later starts sort later.
  CHECK(make_run_id(1796144712, "b") < make_run_id(1796144713, "a"));
}

TEST_CASE("only id-shaped strings pass as run ids") {
  CHECK(plausible_run_id("20261201T170512-checkout"));
  CHECK(plausible_run_id("20261201T170512-checkout-2"));
  CHECK(plausible_run_id(make_run_id(1796144712, "../../etc/passwd")));
  CHECK_FALSE(plausible_run_id("current"));
  CHECK_FALSE(plausible_run_id("20261201T170512-../x"));
  CHECK_FALSE(plausible_run_id("20261201T170512-.hidden"));
  CHECK_FALSE(plausible_run_id("20261201X170512-a"));
  CHECK_FALSE(plausible_run_id("20261201T170512-"));
  CHECK_FALSE(plausible_run_id("20261201T170512-A"));
}

namespace {
Run sample_run() {
  Run run;
  run.id = "20261201T170512-checkout";
  run.name = "checkout";
  run.labels = {{"build", "1234"}};
  run.origin = "api";
  run.state = RunState::Finished;
  run.start = 1796144712.25;
  run.end = 1796145000.5;
  run.last_seen = 1796145000.5;
  run.phases = {{"users=50", 1796144712.25, 50}, {"cool-down", 1796144900, std::nullopt}};
  run.hosts = {"sut-1", "gen-1"};
  return run;
}
}  // namespace

TEST_CASE("a run survives its stored form") {
  Run run = sample_run();
  Run back = run_from_stored_json(nlohmann::json::parse(run_to_stored_json(run).dump()));
  CHECK(back.id == run.id);
  CHECK(back.name == run.name);
  CHECK(back.labels == run.labels);
  CHECK(back.origin == "api");
  CHECK(back.state == RunState::Finished);
  CHECK(back.start == run.start);
  CHECK(back.end == run.end);
  CHECK(back.last_seen == run.last_seen);
  CHECK(back.hosts == run.hosts);
  REQUIRE(back.phases.size() == 2);
  CHECK(back.phases[0].users == 50);
  CHECK_FALSE(back.phases[1].users);
  CHECK(back.phase_end(0) == 1796144900);
  CHECK(back.phase_end(1) == run.end);
}

TEST_CASE("the API view gives each phase its end") {
  Run run = sample_run();
  auto j = run_to_json(run);
  CHECK(j["state"] == "finished");
  CHECK(j["phases"][0]["end"] == 1796144900);
  CHECK(j["phases"][1]["end"] == 1796145000.5);
  CHECK(j["phases"][1]["users"].is_null());
  run.state = RunState::Running;
  run.end.reset();
  CHECK(run_to_json(run)["phases"][1]["end"].is_null());
  CHECK(run_to_json(run)["end"].is_null());
}

TEST_CASE("a stored run with a wrong field is refused, naming it") {
  auto stored = nlohmann::json::parse(run_to_stored_json(sample_run()).dump());
  auto refused = [&](nlohmann::json j) -> std::string {
    try {
      run_from_stored_json(j);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  auto j = stored;
  j["format"] = 2;
  CHECK_THAT(refused(j), Catch::Contains("\"format\""));
  j = stored;
  j["run"]["id"] = "../x";
  CHECK_THAT(refused(j), Catch::Contains("\"run.id\""));
  j = stored;
  j["run"]["state"] = "paused";
  CHECK_THAT(refused(j), Catch::Contains("\"run.state\""));
  j = stored;
  j["run"]["end"] = nullptr;
  CHECK_THAT(refused(j), Catch::Contains("\"run.end\""));
  j = stored;
  j["run"]["phases"][1]["start"] = "soon";
  CHECK_THAT(refused(j), Catch::Contains("\"run.phases[1].start\""));
  j = stored;
  j["run"]["phases"][0]["users"] = 1.5;
  CHECK_THAT(refused(j), Catch::Contains("\"run.phases[0].users\""));
  j = stored;
  j["run"]["labels"]["build"] = 7;
  CHECK_THAT(refused(j), Catch::Contains("\"run.labels.build\""));
  j = stored;
  j["run"]["hosts"] = {"sut-1", "sut-1"};
  CHECK_THAT(refused(j), Catch::Contains("\"run.hosts\""));
  j = stored;
  j["run"]["hosts"] = "sut-1";
  CHECK_THAT(refused(j), Catch::Contains("\"run.hosts\""));
  CHECK_THAT(refused(nlohmann::json::array()), Catch::Contains("not a JSON object"));
}

TEST_CASE("the list's streamed run is the API's view, byte for byte") {
  Run run = sample_run();
  run.phases[1].name = "caf\xc3\xa9 \"q\" \\ \xff";  // escaping and invalid UTF-8 as dump() does
  std::string streamed = "x";
  append_run_json(streamed, run);
  CHECK(streamed == "x" + run_to_json(run).dump(-1, ' ', false,
                                                nlohmann::ordered_json::error_handler_t::replace));
  run.phases.clear();
  run.end.reset();
  streamed.clear();
  append_run_json(streamed, run);
  CHECK(streamed == run_to_json(run).dump());
}
