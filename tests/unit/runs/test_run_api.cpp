// The run API through the real HTTP server on loopback, and `loadwatch run ...` (in process)
// against it: writes off by default, every refusal with its status and field, exec's exit
// codes and phases.
#include <curl/curl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_run.h"
#include "cli/run_client.h"
#include "procfs/proc_pid_stat.h"
#include "routes/run_routes.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/eventually.h"
#include "tests/lib/loopback_server.h"
#include "web/http_server.h"

using loadwatch::test::loadwatch_binary;
using namespace loadwatch;

namespace {

struct Server {
  explicit Server(bool writes) {
    add_run_routes(http, book, writes, answers);
    http.start();
  }
  std::string url() const { return test::loopback_url(http); }
  RunBook book;
  AnswerBuilder answers;  // outlives the server
  HttpServer http{test::loopback_settings()};
};

struct Reply {
  long status = 0;
  nlohmann::json json;
  std::string allow;
};

Reply call(const Server& s, const std::string& method, const std::string& path,
           const std::string& body = "") {
  RunClientOptions options;
  options.url = s.url();
  RunClient client(options);
  RunAnswer a = method == "GET" ? client.get(path) : client.post(path, body);
  REQUIRE(a.reached);
  Reply r;
  r.status = a.status;
  r.json = nlohmann::json::parse(a.body);
  return r;
}

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t header(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  if (line.rfind("Allow:", 0) == 0)
    *static_cast<std::string*>(out) = line.substr(7, line.find('\r') - 7);
  return size * n;
}

Reply raw(const Server& s, const std::string& method, const std::string& path,
          const std::string& body = "") {
  CURL* c = curl_easy_init();
  Reply r;
  std::string text;
  std::string url = s.url() + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (!body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &text);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.allow);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  REQUIRE(curl_easy_perform(c) == CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_cleanup(c);
  if (!text.empty() && text[0] == '{') r.json = nlohmann::json::parse(text);
  return r;
}

int cli(std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return run_cli(static_cast<int>(argv.size()), argv.data());
}

}  // namespace

TEST_CASE("writes are refused unless enabled, naming the flag; reads always work") {
  Server s(false);
  for (std::string path :
       {"/api/v1/runs", "/api/v1/runs/current/phases", "/api/v1/runs/current/stop"}) {
    Reply r = call(s, "POST", path, R"({"name":"x","users":1})");
    CHECK(r.status == 403);
    CHECK(r.json["errorType"] == "forbidden");
    CHECK_THAT(r.json["error"].get<std::string>(), Catch::Contains("--web.enable-run-api"));
  }
  Reply list = call(s, "GET", "/api/v1/runs");
  CHECK(list.status == 200);
  CHECK(list.json["status"] == "success");
  CHECK(list.json["data"].empty());
  CHECK_FALSE(s.book.current());
}

TEST_CASE("a run through the API: start, phases, stop, read") {
  Server s(true);
  Reply started = call(s, "POST", "/api/v1/runs", R"({"name":"checkout","labels":{"build":"7"}})");
  REQUIRE(started.status == 201);
  std::string id = started.json["data"]["id"];
  CHECK(started.json["data"]["state"] == "running");
  CHECK(started.json["data"]["labels"]["build"] == "7");
  Reply phase = call(s, "POST", "/api/v1/runs/current/phases", R"({"users":50})");
  CHECK(phase.status == 201);
  CHECK(phase.json["data"]["phases"][0]["name"] == "users=50");
  CHECK(phase.json["data"]["phases"][0]["users"] == 50);
  CHECK(call(s, "GET", "/api/v1/runs/current").json["data"]["id"] == id);
  Reply stopped = call(s, "POST", "/api/v1/runs/current/stop");
  CHECK(stopped.status == 200);
  CHECK(stopped.json["data"]["state"] == "finished");
  CHECK(stopped.json["data"]["phases"][0]["end"] == stopped.json["data"]["end"]);
  Reply one = call(s, "GET", "/api/v1/runs/" + id);
  CHECK(one.status == 200);
  CHECK(one.json["data"]["id"] == id);
  CHECK(call(s, "GET", "/api/v1/runs").json["data"].size() == 1);
}

TEST_CASE("refusals carry their status, type and field") {
  Server s(true);
  Reply bad = call(s, "POST", "/api/v1/runs", R"({"name":"x","labels":{"build":7}})");
  CHECK(bad.status == 400);
  CHECK(bad.json["errorType"] == "bad_data");
  CHECK(bad.json["field"] == "labels.build");
  CHECK(call(s, "POST", "/api/v1/runs", "not json").json["field"] == "body");
  CHECK(call(s, "POST", "/api/v1/runs", "{}").json["field"] == "name");
  Reply no_run = call(s, "POST", "/api/v1/runs/current/phases", R"({"users":5})");
  CHECK(no_run.status == 409);
  CHECK(no_run.json["errorType"] == "conflict");
  CHECK(call(s, "POST", "/api/v1/runs/current/stop").status == 409);
  CHECK(call(s, "GET", "/api/v1/runs/current").status == 404);
  Reply unknown = call(s, "GET", "/api/v1/runs/20200101T000000-nope");
  CHECK(unknown.status == 404);
  CHECK(unknown.json["errorType"] == "not_found");
  CHECK(raw(s, "GET", "/api/v1/runs/..%2f..%2fetc").status == 404);
  CHECK(raw(s, "GET", "/api/v1/runs/a%2fb").status == 404);
  CHECK(call(s, "GET", "/api/v1/runs/current/phases/x").status == 404);
  call(s, "POST", "/api/v1/runs", R"({"name":"x"})");
  CHECK(call(s, "POST", "/api/v1/runs/current/phases", R"({"users":"5"})").json["field"] ==
        "users");
  CHECK(call(s, "POST", "/api/v1/runs/current/stop", R"({"now":true})").json["field"] == "now");
  Reply del = raw(s, "DELETE", "/api/v1/runs");
  CHECK(del.status == 405);
  CHECK(del.allow == "GET, POST");
  CHECK(raw(s, "GET", "/api/v1/runs/current/stop").status == 405);
  CHECK(raw(s, "PUT", "/api/v1/runs/current").status == 405);
  // The body cap: 413 from the server before any parsing.
  CHECK(raw(s, "POST", "/api/v1/runs", std::string(70 * 1024, ' ')).status == 413);
  CHECK(s.book.current()->name == "x");
}

TEST_CASE("loadwatch run start|phase|stop|list talk to the API") {
  Server s(true);
  std::string url = "--url=" + s.url();
  CHECK(cli({"start", url, "--name", "ci", "--label", "build=9"}) == 0);
  CHECK(s.book.current()->labels.at("build") == "9");
  CHECK(cli({"phase", url, "--users", "50"}) == 0);
  CHECK(cli({"phase", url, "--name", "soak"}) == 0);
  CHECK(s.book.current()->phases.size() == 2);
  CHECK(cli({"list", url}) == 0);
  CHECK(cli({"stop", url}) == 0);
  CHECK_FALSE(s.book.current());
  CHECK(cli({"stop", url}) == 1);  // refused: no run is open
  CHECK(cli({"start", url, "--name", "x", "--label", "bad-key=1"}) == 1);  // the server's 400
  CHECK(cli({"start", url}) == 2);                                         // --name missing
  CHECK(cli({"start", url, "--name", "x", "--label", "novalue"}) == 2);
  CHECK(cli({"phase", url}) == 2);  // neither --name nor --users
  CHECK(cli({"nosuch"}) == 2);
  CHECK(cli({}) == 2);
  CHECK(cli({"stop", "--url=http://127.0.0.1:1"}) == 2);  // unreachable
  CHECK(cli({"stop", "--url=ftp://x"}) == 2);
  CHECK(cli({"stop", url, "--password-file=/nonexistent"}) == 2);
}

TEST_CASE("writes refused by the server fail the CLI with 1") {
  Server s(false);
  CHECK(cli({"start", "--url=" + s.url(), "--name", "x"}) == 1);
  // exec runs nothing unless the run could start.
  CHECK(cli({"exec", "--url=" + s.url(), "--name", "x", "--", "sh", "-c", "exit 0"}) == 2);
}

TEST_CASE("run exec wraps a command in a run and exits with its code") {
  Server s(true);
  std::string url = "--url=" + s.url();
  CHECK(cli({"exec", url, "--name", "three", "--label", "k=v", "--", "sh", "-c", "exit 3"}) == 3);
  CHECK(cli({"exec", url, "--name", "killed", "--", "sh", "-c", "kill -9 $$"}) == 128 + 9);
  CHECK(cli({"exec", url, "--name", "missing", "--", "/nonexistent/cmd"}) == 127);
  auto list = s.book.list();
  REQUIRE(list.size() == 3);
  for (const auto& r : list) CHECK(r.state == RunState::Finished);
  CHECK(list[2].name == "three");
  // The command sees the run and can open phases itself.
  std::string self = loadwatch_binary();
  CHECK(cli({"exec", url, "--name", "nested", "--", "sh", "-c",
             "test -n \"$LOADWATCH_RUN_ID\" && " + self + " run phase --users 7"}) == 0);
  auto nested = s.book.list()[0];
  CHECK(nested.name == "nested");
  REQUIRE(nested.phases.size() == 1);
  CHECK(nested.phases[0].users == 7);
}

TEST_CASE("run exec opens a phase every interval, users rising by the step") {
  Server s(true);
  CHECK(cli({"exec", "--url=" + s.url(), "--name", "steps", "--phase-every", "300ms",
             "--users-step", "50", "--users-start", "10", "--", "sleep", "1"}) == 0);
  auto run = s.book.list()[0];
  REQUIRE(run.phases.size() >= 3);
  REQUIRE(run.phases.size() <= 5);
  CHECK(run.phases[0].users == 10);
  CHECK(run.phases[1].users == 60);
  CHECK(run.phases[2].users == 110);
  CHECK(run.phases[0].start - run.start < 0.2);
  CHECK(run.phases[1].start - run.phases[0].start == Approx(0.3).margin(0.15));
  CHECK(cli({"exec", "--url=" + s.url(), "--name", "x", "--phase-every", "1s", "--", "true"}) == 2);
  CHECK(cli({"exec", "--url=" + s.url(), "--name", "x", "--users-step", "5", "--", "true"}) == 2);
}

TEST_CASE("SIGTERM to run exec reaches the command; the run still stops") {
  // As in the real CLI, no thread but exec's may take SIGTERM: block it before the server's
  // threads start (they inherit the mask).
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  Server s(true);
  pid_t self = getpid();
  // Whether a child of this process runs `sleep`: exec's command, past its exec().
  auto command_runs = [self] {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "stat");
      std::stringstream text;
      text << f.rdbuf();
      auto st = parse_pid_stat(text.str());
      if (st && st->ppid == self && st->comm == "sleep") return true;
    }
    return false;
  };
  std::thread killer([self, command_runs] {
    test::eventually(command_runs, std::chrono::seconds(10));
    kill(self, SIGTERM);  // blocked by exec while its command runs, so taken by sigtimedwait
  });
  int rc = cli({"exec", "--url=" + s.url(), "--name", "term", "--", "sleep", "30"});
  killer.join();
  CHECK(rc == 128 + SIGTERM);
  CHECK_FALSE(s.book.current());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_CASE("phases and stops name their run: another client's run gets none of them") {
  Server s(true);
  Reply mine = call(s, "POST", "/api/v1/runs", R"({"name":"mine"})");
  std::string id = mine.json["data"]["id"];
  CHECK(call(s, "POST", "/api/v1/runs/" + id + "/phases", R"({"users":5})").status == 201);
  Reply other = call(s, "POST", "/api/v1/runs", R"({"name":"other"})");
  std::string other_id = other.json["data"]["id"];
  Reply late = call(s, "POST", "/api/v1/runs/" + id + "/phases", R"({"users":6})");
  CHECK(late.status == 409);
  CHECK_THAT(late.json["error"].get<std::string>(), Catch::Contains("is not open"));
  CHECK(call(s, "POST", "/api/v1/runs/" + id + "/stop").status == 409);
  CHECK(s.book.current()->id == other_id);
  CHECK(s.book.current()->phases.empty());
  CHECK(call(s, "POST", "/api/v1/runs/" + other_id + "/stop").status == 200);
  CHECK(call(s, "POST", "/api/v1/runs/20200101T000000-gone/stop").status == 409);
  // The CLI: --run names it; a run that is not open is refused with 1.
  std::string url = "--url=" + s.url();
  CHECK(cli({"phase", url, "--run", id, "--users", "1"}) == 1);
  CHECK(cli({"stop", url, "--run", "not-an-id"}) == 2);
  CHECK(cli({"start", url, "--name", "third"}) == 0);
  std::string third = s.book.current()->id;
  CHECK(cli({"phase", url, "--run", third, "--users", "3"}) == 0);
  CHECK(cli({"stop", url, "--run", third}) == 0);
  CHECK(s.book.find(third)->phases.size() == 1);
}

TEST_CASE("run exec --phase-every never phases a run another client opened") {
  Server s(true);
  std::atomic<bool> opened{false};
  std::thread other([&] {
    // Once exec's run has its first phase, a second client opens its own run.
    for (int i = 0; i < 200 && !opened; ++i) {
      auto cur = s.book.current();
      if (cur && cur->name == "exec" && !cur->phases.empty()) {
        s.book.start_run(StartRunRequest{"other", {}});
        opened = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  CHECK(cli({"exec", "--url=" + s.url(), "--name", "exec", "--phase-every", "200ms", "--users-step",
             "10", "--", "sleep", "1.2"}) == 0);
  other.join();
  REQUIRE(opened);
  auto cur = s.book.current();
  REQUIRE(cur);  // exec left the other client's run open
  CHECK(cur->name == "other");
  CHECK(cur->phases.empty());
}

namespace {

bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

template <typename F>
bool poll_until(F&& ready, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

}  // namespace

TEST_CASE("SIGKILL of run exec: CMD does not run on, and the run is stopped") {
  Server s(true);
  char tmpl[] = "/tmp/lw_exec_kill_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string pidfile = dir + "/cmd.pid";
  std::vector<std::string> args = {loadwatch_binary(),
                                   "run",
                                   "exec",
                                   "--url=" + s.url(),
                                   "--name",
                                   "killed",
                                   "--",
                                   "sh",
                                   "-c",
                                   "echo $$ > " + pidfile + "; exec sleep 60"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t lw = 0;
  REQUIRE(posix_spawn(&lw, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  pid_t cmd = 0;
  REQUIRE(poll_until(
      [&] {
        std::ifstream f(pidfile);
        return static_cast<bool>(f >> cmd) && cmd > 0;
      },
      std::chrono::seconds(10)));
  REQUIRE(s.book.current());
  std::string id = s.book.current()->id;
  REQUIRE_FALSE(process_gone(cmd));
  REQUIRE(kill(lw, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(lw, &status, 0) == lw);
  // Bounds with room for a loaded machine: the guard execs a second loadwatch to stop the run.
  CHECK(poll_until([&] { return process_gone(cmd); }, std::chrono::seconds(10)));
  CHECK(poll_until([&] { return !s.book.current(); }, std::chrono::seconds(30)));
  auto run = s.book.find(id);
  REQUIRE(run);
  CHECK(run->state == RunState::Finished);
  if (!process_gone(cmd)) kill(cmd, SIGKILL);  // never leave it behind
  std::filesystem::remove_all(dir);
}

TEST_CASE("SIGKILL of run join: the run is stopped where join opened it, not at its source") {
  Server from(true), joined(true);
  Reply opened = call(from, "POST", "/api/v1/runs", R"({"name":"inferred"})");
  REQUIRE(opened.status == 201);
  std::string id = opened.json["data"]["id"];
  std::vector<std::string> args = {loadwatch_binary(), "run", "join", "--from=gen=" + from.url(),
                                   "--url=sut=" + joined.url()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t join = 0;
  REQUIRE(posix_spawn(&join, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  REQUIRE(poll_until([&] { return joined.book.current() && joined.book.current()->id == id; },
                     std::chrono::seconds(10)));
  REQUIRE(kill(join, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(join, &status, 0) == join);
  REQUIRE(WIFSIGNALED(status));
  // The guard execs a second loadwatch to stop the run: room for a loaded machine.
  CHECK(poll_until([&] { return !joined.book.current(); }, std::chrono::seconds(30)));
  auto run = joined.book.find(id);
  REQUIRE(run);
  CHECK(run->state == RunState::Finished);
  // The source's run is its generator's own: still open, with the hosts join told it.
  REQUIRE(from.book.current());
  CHECK(from.book.current()->id == id);
}

TEST_CASE("GET /api/v1/runs pages: limit, page_token, summaries unless phases=1") {
  Server s(true);
  for (int i = 0; i < 5; ++i) {
    s.book.start_run(StartRunRequest{"r" + std::to_string(i), {}});
    s.book.add_phase(PhaseRequest{"users=1", 1});
  }
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 10; ++page) {
    Reply r =
        call(s, "GET", "/api/v1/runs?limit=2" + (token.empty() ? "" : "&page_token=" + token));
    REQUIRE(r.status == 200);
    CHECK(r.json["data"].size() <= 2);
    for (const auto& run : r.json["data"]) {
      seen.push_back(run["id"]);
      CHECK_FALSE(run.contains("phases"));
      CHECK(run["phase_count"] == 1);
    }
    if (!r.json.contains("next_page_token")) break;
    token = r.json["next_page_token"];
  }
  std::vector<std::string> all;
  for (const Run& r : s.book.list()) all.push_back(r.id);
  CHECK(seen == all);
  Reply full = call(s, "GET", "/api/v1/runs?phases=1&limit=1");
  REQUIRE(full.json["data"].size() == 1);
  CHECK(full.json["data"][0]["phases"].size() == 1);
  CHECK(full.json["data"][0]["id"] == all[0]);
  CHECK(call(s, "GET", "/api/v1/runs?limit=0").status == 400);
  CHECK(call(s, "GET", "/api/v1/runs?limit=501").status == 400);
  CHECK(call(s, "GET", "/api/v1/runs?phases=1&limit=11").json["field"] == "limit");
  CHECK(call(s, "GET", "/api/v1/runs?phases=yes").json["field"] == "phases");
  CHECK(call(s, "GET", "/api/v1/runs?page_token=../x").json["field"] == "page_token");
  CHECK(call(s, "GET", "/api/v1/runs?page_token=20200101T000000-gone").status == 400);
}
