// RunBook: the API's runs and phases, the bounded history, storage across restarts (open runs
// come back interrupted, broken files are set aside), and runs inferred from generators.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "runs/run_book.h"

using namespace loadwatch;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/lw_runbook_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

StartRunRequest start(const std::string& name) { return StartRunRequest{name, {}}; }
PhaseRequest users(std::int64_t n) { return PhaseRequest{"users=" + std::to_string(n), n}; }

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

GeneratorSighting seen(const std::string& origin, GeneratorActivity a, std::optional<double> users,
                       double at) {
  GeneratorSighting s;
  s.origin = origin;
  s.activity = a;
  s.users = users;
  s.at = at;
  s.stale_after = 15;
  return s;
}

}  // namespace

TEST_CASE("an API run starts, takes phases and stops") {
  double t = 1796144712;
  RunBook book(nullptr, {}, [&] { return t; });
  CHECK_FALSE(book.current());
  auto started = book.start_run(StartRunRequest{"checkout", {{"build", "7"}}});
  CHECK(started.run.id == "20261201T170512-checkout");
  CHECK(started.run.open());
  CHECK(started.run.origin == "api");
  CHECK(started.warnings.empty());
  t += 10;
  book.add_phase(users(50));
  t += 180;
  auto phased = book.add_phase(users(100));
  REQUIRE(phased.run.phases.size() == 2);
  CHECK(phased.run.phases[0].start == 1796144722);
  CHECK(phased.run.phase_end(0) == 1796144902);
  CHECK_FALSE(phased.run.phase_end(1));
  t += 180;
  auto stopped = book.stop_run();
  CHECK(stopped.run.state == RunState::Finished);
  CHECK(stopped.run.end == 1796145082);
  CHECK(stopped.run.phase_end(1) == 1796145082);
  CHECK_FALSE(book.current());
  REQUIRE(book.find("20261201T170512-checkout"));
  CHECK(book.find("20261201T170512-checkout")->labels.at("build") == "7");
  CHECK_FALSE(book.find("20261201T170512-other"));
}

TEST_CASE("starting a run ends the one still open; ids stay unique") {
  double t = 1796144712;
  RunBook book(nullptr, {}, [&] { return t; });
  book.start_run(start("a"));
  book.add_phase(users(10));
  t += 0.5;  // same second, same name: a suffix keeps the ids apart
  book.start_run(start("a"));
  auto list = book.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0].id == "20261201T170512-a-2");
  CHECK(list[0].open());
  CHECK(list[1].id == "20261201T170512-a");
  CHECK(list[1].state == RunState::Finished);
  CHECK(list[1].end == t);
}

TEST_CASE("writes the state refuses are conflicts") {
  double t = 100;
  RunBookLimits limits;
  limits.max_phases = 2;
  RunBook book(nullptr, limits, [&] { return t; });
  CHECK_THROWS_AS(book.add_phase(users(1)), RunConflict);
  CHECK_THROWS_AS(book.stop_run(), RunConflict);
  book.start_run(start("x"));
  book.add_phase(users(1));
  book.add_phase(users(2));
  CHECK_THROWS_WITH(book.add_phase(users(3)), Catch::Contains("2 phases"));
}

TEST_CASE("a run opened on several loadwatches: the client's id and instants") {
  double t = 1796144712;
  RunBook book(nullptr, {}, [&] { return t; });
  StartRunRequest req = start("fleet");
  req.id = "20261201T170500-fleet";  // the client's clock, 12 s behind this one
  req.at = t - 0.75;
  auto started = book.start_run(req);
  CHECK(started.run.id == "20261201T170500-fleet");
  CHECK(started.run.start == t - 0.75);
  PhaseRequest p = users(10);
  p.at = t + 5.25;
  CHECK(book.add_phase(p, req.id).run.phases[0].start == t + 5.25);
  // An id kept already is a conflict, never a second run of the same id.
  CHECK_THROWS_AS(book.start_run(req), RunConflict);
  // An instant a minute off this clock is refused, and changes nothing.
  p.at = t + kMaxRunClockOffsetSeconds + 1;
  CHECK_THROWS_AS(book.add_phase(p, req.id), RunRequestError);
  CHECK(book.current()->phases.size() == 1);
  auto stopped = book.stop_run(req.id, StopRequest{t + 9.5});
  CHECK(stopped.run.end == t + 9.5);
}

TEST_CASE("phases never start before the run or the phase before them") {
  double t = 1000;
  RunBook book(nullptr, {}, [&] { return t; });
  book.start_run(start("x"));
  t = 990;  // the wall clock stepped back
  auto r = book.add_phase(users(1));
  CHECK(r.run.phases[0].start == 1000);
}

TEST_CASE("the history keeps the last runs, in memory and on disk") {
  TempDir dir;
  double t = 1796144712;
  RunBookLimits limits;
  limits.max_finished = 3;
  RunBook book(std::make_unique<RunStore>(dir.path), limits, [&] { return t; });
  for (int i = 0; i < 5; ++i) {
    book.start_run(start("run" + std::to_string(i)));
    t += 60;
    book.stop_run();
  }
  auto list = book.list();
  REQUIRE(list.size() == 3);
  CHECK(list[0].name == "run4");
  CHECK(list[2].name == "run2");
  CHECK(files_in(dir.path + "/runs") ==
        std::vector<std::string>{list[2].id + ".json", list[1].id + ".json", list[0].id + ".json"});
}

TEST_CASE("a run open when the daemon died comes back interrupted, ending when last seen") {
  TempDir dir;
  double t = 1796144712;
  std::string id;
  {
    RunBook book(std::make_unique<RunStore>(dir.path), {}, [&] { return t; });
    book.start_run(start("soak"));
    book.add_phase(users(50));
    t += 30;
    book.tick(t);  // heartbeat: last seen written
    t += 5;
    book.tick(t);  // under the heartbeat period: not written
    id = book.current()->id;
    // Destroyed without checkpoint(): as after kill -9.
  }
  t += 3600;
  RunBook again(std::make_unique<RunStore>(dir.path), {}, [&] { return t; });
  CHECK_FALSE(again.current());
  auto run = again.find(id);
  REQUIRE(run);
  CHECK(run->state == RunState::Interrupted);
  CHECK(run->end == 1796144742);
  REQUIRE(run->phases.size() == 1);
  CHECK(run->phases[0].users == 50);
  // Marked on disk too: a third start does not see it open again.
  std::ifstream f(dir.path + "/runs/" + id + ".json");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("\"interrupted\""));
}

TEST_CASE("a clean stop records when the open run was last seen") {
  TempDir dir;
  double t = 1796144712;
  std::string id;
  {
    RunBook book(std::make_unique<RunStore>(dir.path), {}, [&] { return t; });
    id = book.start_run(start("soak")).run.id;
    t += 7;
    book.checkpoint();
  }
  RunBook again(std::make_unique<RunStore>(dir.path), {}, [&] { return t; });
  CHECK(again.find(id)->end == 1796144719);
  CHECK(again.find(id)->state == RunState::Interrupted);
}

TEST_CASE("broken run files are set aside; the others are kept") {
  TempDir dir;
  double t = 1796144712;
  std::vector<std::string> ids;
  {
    RunBook book(std::make_unique<RunStore>(dir.path), {}, [&] { return t; });
    for (int i = 0; i < 3; ++i) {
      ids.push_back(book.start_run(start("r" + std::to_string(i))).run.id);
      t += 10;
      book.stop_run();
    }
  }
  std::string runs = dir.path + "/runs/";
  // Truncate one file mid-way, as a crash without atomic writes would.
  std::string victim = runs + ids[1] + ".json";
  fs::resize_file(victim, fs::file_size(victim) / 2);
  { std::ofstream(runs + "20261201T000000-empty.json"); }
  {
    std::ofstream(runs + "20261201T000001-huge.json")
        << std::string(RunStore::kMaxFileBytes + 10, ' ');
  }
  { std::ofstream(runs + "20261201T000002-wrongname.json") << "{\"format\":1}"; }
  { std::ofstream(runs + ".20261201T000003-x.json.tmp") << "half"; }

  RunStore store(dir.path);
  auto loaded = store.load();
  REQUIRE(loaded.runs.size() == 2);
  CHECK(loaded.runs[0].id == ids[0]);
  CHECK(loaded.runs[1].id == ids[2]);
  REQUIRE(loaded.problems.size() == 4);
  std::string all;
  for (const auto& p : loaded.problems) all += p + "\n";
  CHECK_THAT(all, Catch::Contains(ids[1] + ".json: not valid JSON (truncated or corrupt)"));
  CHECK_THAT(all, Catch::Contains("empty (truncated)"));
  CHECK_THAT(all, Catch::Contains("larger than"));
  CHECK_THAT(all, Catch::Contains("field \"run\""));
  CHECK_THAT(all, Catch::Contains("set aside as " + victim + ".corrupt"));
  CHECK(fs::exists(victim + ".corrupt"));
  CHECK_FALSE(fs::exists(victim));
  CHECK_FALSE(fs::exists(runs + ".20261201T000003-x.json.tmp"));
  // Set aside means never read again: a second load finds only the good runs, no problems.
  auto again = store.load();
  CHECK(again.runs.size() == 2);
  CHECK(again.problems.empty());
}

TEST_CASE("a FIFO or a symlink among the run files is set aside unread, without blocking") {
  TempDir dir;
  { RunStore create(dir.path); }
  std::string runs = dir.path + "/runs/";
  // Opening a FIFO for reading waits for a writer: the load must not.
  REQUIRE(::mkfifo((runs + "20261201T000000-fifo.json").c_str(), 0640) == 0);
  { std::ofstream(dir.path + "/elsewhere.json") << "{}"; }
  fs::create_symlink(dir.path + "/elsewhere.json", runs + "20261201T000001-link.json");

  RunStore store(dir.path);
  auto loaded = store.load();
  CHECK(loaded.runs.empty());
  REQUIRE(loaded.problems.size() == 2);
  CHECK_THAT(loaded.problems[0], Catch::Contains("-fifo.json: cannot read: is a FIFO"));
  CHECK_THAT(loaded.problems[1], Catch::Contains("-link.json: cannot read: is a symlink"));
  CHECK(fs::exists(runs + "20261201T000000-fifo.json.corrupt"));
}

TEST_CASE("a storage path that cannot be used fails at once, naming it") {
  TempDir dir;
  std::string file = dir.path + "/plain-file";
  { std::ofstream(file) << "x"; }
  CHECK_THROWS_WITH(RunStore(file + "/state"), Catch::Contains(file + "/state"));
  CHECK_THROWS_WITH(RunStore(file), Catch::Contains("not a directory"));
}

TEST_CASE("a run keeps the hosts it was opened on, or joined on") {
  double t = 1796144712;
  RunBook book(nullptr, {}, [&] { return t; });
  StartRunRequest req = start("fleet");
  req.hosts = {"sut-1", "gen-1"};
  CHECK(book.start_run(req).run.hosts == req.hosts);
  // An inferred run, joined on other hosts: the joining client tells this one who took part.
  const std::string o = "locust:lc";
  book.stop_run();
  book.generator_seen(seen(o, GeneratorActivity::Steady, 10, t));
  std::string id = book.current()->id;
  CHECK(book.current()->hosts.empty());
  CHECK(book.set_hosts(id, HostsRequest{{"gen-1", "sut-1"}}).run.hosts ==
        std::vector<std::string>{"gen-1", "sut-1"});
  CHECK_THROWS_AS(book.set_hosts("20261201T170500-other", HostsRequest{{"a"}}), RunConflict);
  book.generator_seen(seen(o, GeneratorActivity::Idle, 0, t + 5));
  CHECK_THROWS_AS(book.set_hosts(id, HostsRequest{{"a"}}), RunConflict);  // no longer open
  CHECK(book.find(id)->hosts == std::vector<std::string>{"gen-1", "sut-1"});
}

TEST_CASE("a Locust test opens a run, each settled user count a phase, stopping closes it") {
  RunBook book(nullptr, {}, [] { return 0.0; });
  const std::string o = "locust:lc";
  book.generator_seen(seen(o, GeneratorActivity::Idle, 0, 100));
  CHECK_FALSE(book.current());
  book.generator_seen(seen(o, GeneratorActivity::Ramping, 10, 105));
  REQUIRE(book.current());
  CHECK(book.current()->origin == o);
  CHECK(book.current()->name == "lc");
  CHECK(book.current()->start == 105);
  CHECK(book.current()->phases.empty());  // ramping: the step's count is not settled yet
  book.generator_seen(seen(o, GeneratorActivity::Steady, 50, 110));
  book.generator_seen(seen(o, GeneratorActivity::Steady, 50, 115));  // same count: same phase
  book.generator_seen(seen(o, GeneratorActivity::Ramping, 70, 200));
  book.generator_seen(seen(o, GeneratorActivity::Ramping, 90, 205));
  book.generator_seen(seen(o, GeneratorActivity::Steady, 100, 210));
  book.generator_seen(seen(o, GeneratorActivity::Steady, 150, 300));  // no ramp seen
  auto run = *book.current();
  REQUIRE(run.phases.size() == 3);
  CHECK(run.phases[0].name == "users=50");
  CHECK(run.phases[0].start == 105);  // the ramp to it began with the run
  CHECK(run.phases[1].users == 100);
  CHECK(run.phases[1].start == 200);  // where the ramp began
  CHECK(run.phases[2].users == 150);
  CHECK(run.phases[2].start == 300);
  book.generator_seen(seen(o, GeneratorActivity::Idle, 0, 400));
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].end == 400);
  CHECK(book.list()[0].phase_end(2) == 400);
}

TEST_CASE("a scraped change is dated to the middle of the span it must lie in") {
  // A source scraped every 5 s sees a new state up to 5 s (plus its data's age) after the
  // generator changed: the run, its phases and its end sit between the two answers.
  RunBook book(nullptr, {}, [] { return 0.0; });
  const std::string o = "locust:lc";
  auto scraped = [&](GeneratorActivity a, double users, double at, double since) {
    GeneratorSighting s = seen(o, a, users, at);
    s.since = since;
    book.generator_seen(s);
  };
  scraped(GeneratorActivity::Idle, 0, 100, 93);
  scraped(GeneratorActivity::Steady, 1, 105, 98);    // started in (98, 105]
  scraped(GeneratorActivity::Steady, 1, 110, 103);   // no change: no new phase
  scraped(GeneratorActivity::Steady, 4, 115, 108);   // stepped in (108, 115]
  scraped(GeneratorActivity::Ramping, 6, 120, 113);  // ramp began in (113, 120]
  scraped(GeneratorActivity::Steady, 8, 125, 118);
  scraped(GeneratorActivity::Steady, 8, 126, 127);  // a since after `at` is ignored
  scraped(GeneratorActivity::Idle, 0, 135, 124);    // stopped in (124, 135]
  const Run run = book.list()[0];
  CHECK(run.start == 101.5);
  REQUIRE(run.phases.size() == 3);
  CHECK(run.phases[0].start == 101.5);
  CHECK(run.phases[1].start == 111.5);
  CHECK(run.phases[2].start == 116.5);
  CHECK(run.end == 129.5);
}

TEST_CASE("an API run wins over inferred starts, stops and phases") {
  double t = 100;
  RunBook book(nullptr, {}, [&] { return t; });
  book.start_run(start("ci"));
  book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 50, 101));
  book.generator_run_started("jmeter:jm", "Test", 102);
  book.generator_seen(seen("locust:lc", GeneratorActivity::Idle, 0, 103));
  book.generator_run_ended("jmeter:jm", 104);
  REQUIRE(book.current());
  CHECK(book.current()->origin == "api");
  CHECK(book.current()->phases.empty());
  CHECK(book.list().size() == 1);
  // An API start ends an inferred run.
  book.stop_run();
  book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 50, 110));
  CHECK(book.current()->origin == "locust:lc");
  t = 120;
  book.start_run(start("ci2"));
  auto list = book.list();
  CHECK(list[0].origin == "api");
  CHECK(list[1].origin == "locust:lc");
  CHECK(list[1].end == 120);
}

TEST_CASE("a second generator does not take over an inferred run") {
  RunBook book(nullptr, {}, [] { return 0.0; });
  book.generator_seen(seen("locust:a", GeneratorActivity::Steady, 5, 100));
  book.generator_seen(seen("locust:b", GeneratorActivity::Steady, 9, 101));
  book.generator_seen(seen("locust:b", GeneratorActivity::Idle, 0, 102));
  REQUIRE(book.current());
  CHECK(book.current()->origin == "locust:a");
  CHECK(book.current()->phases.size() == 1);
}

TEST_CASE("a generator that goes quiet ends its run where it was last seen") {
  double wall = 100, mono = 7;
  RunBook book(
      nullptr, {}, [&] { return wall; }, [&] { return mono; });
  book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 5, 100));
  // Ticks every second, as the sampler's.
  auto quiet_for = [&](int seconds) {
    for (int i = 0; i < seconds; ++i) {
      wall += 1;
      mono += 1;
      book.tick(wall);
    }
  };
  quiet_for(10);
  CHECK(book.current());
  quiet_for(6);  // stale_after 15
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].end == 100);
  // Then another generator may start one.
  book.generator_seen(seen("locust:b", GeneratorActivity::Steady, 5, wall));
  CHECK(book.current()->origin == "locust:b");
}

TEST_CASE("a generator's silence is timed on the monotonic clock, without loadwatch's pauses") {
  double wall = 1000, mono = 50;
  RunBook book(
      nullptr, {}, [&] { return wall; }, [&] { return mono; });
  auto tick = [&](double wall_moved, double mono_moved) {
    wall += wall_moved;
    mono += mono_moved;
    book.tick(wall);
  };
  book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 5, wall));
  tick(1, 1);
  SECTION("the wall clock set 20 s ahead is no silence") {
    tick(21, 1);  // NTP, or a VM resumed: the monotonic clock moved 1 s
    tick(1, 1);
    CHECK(book.current());
    // Seen again: the run goes on, its phases on the new wall clock.
    book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 6, wall));
    REQUIRE(book.current());
    CHECK(book.current()->phases.size() == 2);
  }
  SECTION("17 s stopped (SIGSTOP, a VM paused) is no silence") {
    tick(17, 17);  // both clocks moved, with no tick in between
    tick(1, 1);
    CHECK(book.current());
    book.generator_seen(seen("locust:lc", GeneratorActivity::Steady, 5, wall));
    CHECK(book.current());
  }
  SECTION("a quiet generator still ends its run after 15 awake seconds") {
    tick(17, 17);  // a pause first: it does not count
    for (int i = 0; i < 14; ++i) tick(1, 1);
    CHECK(book.current());  // 15 awake seconds since it was seen: not over 15 yet
    tick(1, 1);
    CHECK_FALSE(book.current());
    CHECK(book.list()[0].end == 1000);  // where it was last seen, on the wall clock
  }
}

TEST_CASE("JMeter's annotations open and close a run named after the test") {
  double mono = 100;
  RunBookLimits limits;
  limits.max_unseen_gap_seconds = 100;  // this book looks at its clocks rarely
  RunBook book(
      nullptr, limits, [] { return 0.0; }, [&] { return mono; });
  book.generator_run_started("jmeter:jmx", "Checkout plan", 100);
  REQUIRE(book.current());
  CHECK(book.current()->name == "Checkout plan");
  CHECK(book.current()->origin == "jmeter:jmx");
  GeneratorSighting alive = seen("jmeter:jmx", GeneratorActivity::Unknown, std::nullopt, 150);
  alive.stale_after = 60;
  mono = 150;
  book.generator_seen(alive);
  mono = 200;
  book.tick(200);
  CHECK(book.current());  // pushes keep it open (100 s after its start, 50 after the push)
  book.generator_run_ended("jmeter:other", 210);
  CHECK(book.current());
  book.generator_run_ended("jmeter:jmx", 220);
  CHECK_FALSE(book.current());
  CHECK(book.list()[0].end == 220);
  // A start with an empty title is named after the source.
  book.generator_run_started("jmeter:jmx", "", 300);
  CHECK(book.current()->name == "jmx");
  // A new start from the same generator begins a new run.
  book.generator_run_started("jmeter:jmx", "again", 400);
  CHECK(book.current()->name == "again");
  CHECK(book.list()[1].end == 400);
}

TEST_CASE("a wrk summary is one finished run, however often it is read") {
  double t = 5000;
  RunBook book(nullptr, {}, [&] { return t; });
  book.finished_run_seen("wrk:smoke", "smoke", 1000, 1010);
  book.finished_run_seen("wrk:smoke", "smoke", 1000, 1010.4);
  CHECK_FALSE(book.current());
  auto list = book.list();
  REQUIRE(list.size() == 1);
  CHECK(list[0].origin == "wrk:smoke");
  CHECK(list[0].start == 1000);
  CHECK(list[0].end == 1010);
  CHECK(list[0].state == RunState::Finished);
  book.finished_run_seen("wrk:smoke", "smoke", 2000, 2010);  // the next run of that name
  CHECK(book.list().size() == 2);
  book.finished_run_seen("wrk:bad", "bad", 10, 5);  // ends before it starts
  CHECK(book.list().size() == 2);
}

TEST_CASE("a wrk summary inside an API run belongs to that run") {
  double t = 1000;
  RunBook book(nullptr, {}, [&] { return t; });
  book.start_run(start("ci"));
  book.finished_run_seen("wrk:step", "step", 1001, 1004);  // while it is open
  t = 1100;
  book.stop_run();
  book.finished_run_seen("wrk:step2", "step2", 1050, 1060);  // read after it ended
  book.finished_run_seen("wrk:later", "later", 1200, 1210);
  auto list = book.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0].origin == "wrk:later");
}

TEST_CASE("exposed: the open run and the run that ended last") {
  double t = 1000;
  RunBook book(nullptr, {}, [&] { return t; });
  CHECK_FALSE(book.exposed().current);
  CHECK_FALSE(book.exposed().last_finished);
  book.start_run(start("a"));
  t = 1100;
  book.start_run(start("b"));
  book.finished_run_seen("wrk:old", "old", 10, 20);  // older: not the last to end
  book.add_phase(users(20));
  auto e = book.exposed();
  CHECK(e.current->name == "b");
  CHECK(e.current->phase->users == 20);
  CHECK(e.last_finished->id == "19700101T001640-a");
  CHECK(e.last_finished->end == 1100);
}

TEST_CASE("concurrent writers and readers leave consistent runs on disk") {
  TempDir dir;
  RunBookLimits limits;
  limits.max_finished = 20;
  std::string last_id;
  {
    RunBook book(std::make_unique<RunStore>(dir.path), limits);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) {
      threads.emplace_back([&, w] {
        std::mt19937 rng(w);
        for (int i = 0; i < 60; ++i) {
          try {
            switch (rng() % 4) {
              case 0:
                book.start_run(start("w" + std::to_string(w)));
                break;
              case 1:
                book.add_phase(users(i));
                break;
              case 2:
                book.stop_run();
                break;
              case 3:
                book.generator_seen(
                    seen("locust:x", GeneratorActivity::Steady, double(i % 7), 1796144712.0 + i));
                break;
            }
          } catch (const RunConflict&) {
          }
        }
      });
    }
    std::atomic<int> bad_reads{0};  // Catch's assertions are not thread-safe: count, check after
    std::thread reader([&] {
      while (!stop) {
        for (const auto& r : book.list()) bad_reads += r.id.empty() || (r.open() && r.end);
        book.exposed();
        book.tick(1796144712.0);
      }
    });
    for (auto& th : threads) th.join();
    stop = true;
    reader.join();
    CHECK(bad_reads == 0);
    try {
      book.stop_run();
    } catch (const RunConflict&) {
    }
    auto list = book.list();
    CHECK_FALSE(book.current());
    std::map<std::string, std::size_t> per_writer;  // retention is per writer
    for (const auto& r : list) ++per_writer[r.origin == "api" ? "api" : r.origin];
    for (const auto& [writer, n] : per_writer) CHECK(n <= 20);
    CHECK(files_in(dir.path + "/runs").size() == list.size());
  }
  RunStore store(dir.path);
  auto loaded = store.load();
  CHECK(loaded.problems.empty());
  for (const auto& r : loaded.runs) CHECK_FALSE(r.open());  // the newest state of each won
}

namespace {

/// A size from /proc/self/status ("VmHWM:": the peak RSS since reset_peak_rss()), in bytes.
std::size_t status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return 0;
}
bool reset_peak_rss() { return static_cast<bool>(std::ofstream("/proc/self/clear_refs") << "5"); }

}  // namespace

TEST_CASE("the loader holds a run file to the API's rules and a bounded parse") {
  TempDir dir;
  { RunStore create(dir.path); }
  std::string runs = dir.path + "/runs/";
  auto stored = [](const std::string& id, const std::string& name, const std::string& end,
                   const std::string& phases) {
    return R"({"format":1,"run":{"id":")" + id + R"(","name":)" + name +
           R"(,"labels":{},"origin":"api","state":"finished","start":1796144712,"end":)" + end +
           R"(,"phases":[)" + phases + R"(]},"last_seen":1796144712})";
  };
  std::string many;
  for (int i = 0; i < 20000; ++i) {
    many += std::string(i ? "," : "") + R"({"name":"p","start":1796144712,"users":1})";
  }
  const std::string good = "20261201T170512-good";
  { std::ofstream(runs + good + ".json") << stored(good, "\"good\"", "1796144800", ""); }
  {
    std::ofstream(runs + "20261201T170513-many.json")
        << stored("20261201T170513-many", "\"many\"", "1796144800", many);
  }
  {
    std::ofstream(runs + "20261201T170514-far.json")
        << stored("20261201T170514-far", "\"far\"", "1e308", "");
  }
  {
    std::ofstream(runs + "20261201T170515-nul.json")
        << stored("20261201T170515-nul", R"("a\u0000b")", "1796144800", "");
  }
  {
    std::ofstream(runs + "20261201T170516-nl.json")
        << stored("20261201T170516-nl", R"("a\nb")", "1796144800", "");
  }
  {
    std::ofstream(runs + "20261201T170517-bidi.json")
        << stored("20261201T170517-bidi", R"("a\u202Eb")", "1796144800", "");
  }
  {
    std::ofstream(runs + "20261201T170518-dup.json")
        << stored("20261201T170518-dup", R"("a","name":"b")", "1796144800", "");
  }
  { std::ofstream(runs + "20261201T170519-brackets.json") << std::string(4 << 20, '['); }

  RunStore store(dir.path);
  REQUIRE(reset_peak_rss());
  std::size_t before = status_bytes("VmRSS:");
  auto loaded = store.load();
  std::size_t peak = status_bytes("VmHWM:");
  REQUIRE(loaded.runs.size() == 1);
  CHECK(loaded.runs[0].id == good);
  std::string all;
  for (const auto& p : loaded.problems) all += p + "\n";
  INFO(all);
  REQUIRE(loaded.problems.size() == 7);
  CHECK_THAT(all, Catch::Contains("-many.json: not valid JSON (truncated or corrupt): more than"));
  CHECK_THAT(all, Catch::Contains("at most 1000 phases"));
  CHECK_THAT(all, Catch::Contains("-far.json: field \"run.end\": outside"));
  CHECK_THAT(all, Catch::Contains("-nul.json: field \"run.name\": contains a control"));
  CHECK_THAT(all, Catch::Contains("-nl.json: field \"run.name\": contains a control"));
  CHECK_THAT(all, Catch::Contains("-bidi.json: field \"run.name\": contains a control or format"));
  CHECK_THAT(all,
             Catch::Contains("-dup.json: not valid JSON (truncated or corrupt): key \"name\""));
  CHECK_THAT(all, Catch::Contains("-brackets.json: not valid JSON (truncated or corrupt): nested"));
  CHECK(fs::exists(runs + "20261201T170513-many.json.corrupt"));
  CHECK(fs::exists(runs + "20261201T170519-brackets.json.corrupt"));
  CHECK(files_in(runs).size() == 8);  // the good file and seven set aside
  // The files are 4 MiB at most: reading one may cost that and a little, never hundreds of MB.
  INFO("peak " << peak << " before " << before);
  CHECK(peak < before + (24u << 20));
}

TEST_CASE("retention: a writer only makes room from its own runs") {
  TempDir dir;
  double t = 1796144712;
  RunBookLimits limits;
  limits.max_finished = 5;
  RunBook book(std::make_unique<RunStore>(dir.path), limits, [&] { return t; });
  std::vector<std::string> api;
  for (int i = 0; i < 3; ++i) {
    api.push_back(book.start_run(start("real" + std::to_string(i))).run.id);
    t += 10;
    book.stop_run();
  }
  // 101 annotated runs from one pusher: it keeps its last five, the API keeps all of its own.
  for (int i = 0; i < 101; ++i) {
    book.generator_run_started("jmeter:flood", "flood" + std::to_string(i), t);
    book.generator_run_ended("jmeter:flood", t + 1);
    t += 2;
  }
  book.checkpoint();  // writes what the inferred runs queued
  std::size_t api_kept = 0, flood_kept = 0;
  for (const Run& r : book.list()) (r.origin == "api" ? api_kept : flood_kept)++;
  CHECK(api_kept == 3);
  CHECK(flood_kept == 5);
  auto files = files_in(dir.path + "/runs");
  CHECK(files.size() == 8);
  for (const auto& id : api)
    CHECK(std::find(files.begin(), files.end(), id + ".json") != files.end());
}

TEST_CASE("retention: a run younger than the minimum age is never deleted") {
  TempDir dir;
  double t = 1796144712;
  RunBookLimits limits;
  limits.max_finished = 2;
  limits.min_age_seconds = 600;
  RunBook book(std::make_unique<RunStore>(dir.path), limits, [&] { return t; });
  auto first = book.start_run(start("a")).run.id;
  t += 10;
  book.stop_run();
  book.start_run(start("b"));
  t += 10;
  book.stop_run();
  CHECK_THROWS_WITH(book.start_run(start("c")), Catch::Contains("--runs.min-age"));
  CHECK(book.list().size() == 2);
  t += 600;  // now the first run is old enough to go
  book.start_run(start("c"));
  CHECK_FALSE(book.find(first));
  CHECK_FALSE(fs::exists(dir.path + "/runs/" + first + ".json"));
  // Inferred runs obey the same age: a generator's run is not recorded, nothing is deleted.
  RunBook inferred(nullptr, limits, [&] { return t; });
  for (int i = 0; i < 3; ++i) {
    inferred.generator_run_started("jmeter:j", "x", t + i);
    inferred.generator_run_ended("jmeter:j", t + i + 0.5);
  }
  CHECK(inferred.list().size() == 2);
  CHECK(inferred.list()[1].start == t);
}

TEST_CASE("retention: bytes per writer and the number of writers are bounded") {
  double t = 1796144712;
  RunBookLimits limits;
  limits.max_writers = 3;  // the API and two others
  limits.max_bytes_per_writer = 64 << 10;
  RunBook book(nullptr, limits, [&] { return t; });
  for (const char* origin : {"jmeter:a", "jmeter:b", "jmeter:c"}) {
    book.generator_run_started(origin, "x", t);
    book.generator_run_ended(origin, t + 1);
    t += 2;
  }
  std::set<std::string> origins;
  for (const Run& r : book.list()) origins.insert(r.origin);
  CHECK(origins == std::set<std::string>{"jmeter:a", "jmeter:b"});
  // The API still has its place.
  book.start_run(start("api"));
  // 320 phases are ~33 KB: the third such run pushes out the first.
  std::vector<std::string> ids;
  for (int r = 0; r < 3; ++r) {
    ids.push_back(book.start_run(start("big")).run.id);
    for (int i = 0; i < 320; ++i) book.add_phase(users(i));
    t += 1;
  }
  book.stop_run();
  CHECK_FALSE(book.find(ids[0]));
  CHECK(book.find(ids[1]));
  CHECK(book.find(ids[2]));
}
