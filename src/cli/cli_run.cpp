#include "cli/cli_run.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "cli/run_client.h"
#include "util/bounded_json.h"

namespace loadwatch {

namespace {

constexpr int kRefused = 1;
constexpr int kUsage = 2;

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// The "error" of an API error body, else the body itself (trimmed).
std::string server_message(const RunAnswer& a) {
  try {
    auto j = parse_bounded_json(a.body);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
      return j["error"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  std::string body = a.body.substr(0, 300);
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return body;
}

/// What a successful answer's "data" must be.
enum class Expect { any, run, run_list };

/// Throws JsonInputError unless `run` is a run object as the API writes it, so that reading
/// its fields afterwards cannot fail.
void expect_run(const nlohmann::json& run) {
  if (!run.is_object()) throw JsonInputError(std::string("a run is ") + run.type_name());
  if (json_string_or(run, "id").empty()) throw JsonInputError("a run has no \"id\"");
  json_string_or(run, "state");
  json_string_or(run, "origin");
  json_number_or(run, "start", 0);
  json_number_or(run, "end", 0);
  for (const auto& p : json_array_or_empty(run, "phases")) {
    if (!p.is_object()) throw JsonInputError(std::string("a phase is ") + p.type_name());
    json_string_or(p, "name");
  }
}

/// Prints why a request failed and returns the exit code; 0 (and the data) when it worked.
/// An answer that is not what a loadwatch sends is exit 2 with a message.
int check(const char* what, const RunAnswer& a, nlohmann::json* data = nullptr,
          Expect expect = Expect::run) {
  if (!a.reached) {
    std::fprintf(stderr, "loadwatch run %s: %s\n", what, a.error.c_str());
    return kUsage;
  }
  if (a.status < 200 || a.status >= 300) {
    std::fprintf(stderr, "loadwatch run %s: HTTP %ld: %s\n", what, a.status,
                 server_message(a).c_str());
    return kRefused;
  }
  try {
    nlohmann::json j = parse_bounded_json(a.body);
    if (!j.is_object()) throw JsonInputError(std::string("the answer is ") + j.type_name());
    for (const auto& w : json_array_or_empty(j, "warnings")) {
      std::fprintf(stderr, "loadwatch run %s: warning: %s\n", what,
                   w.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace).c_str());
    }
    nlohmann::json d = j.contains("data") ? std::move(j["data"]) : nlohmann::json();
    if (expect == Expect::run) expect_run(d);
    if (expect == Expect::run_list) {
      if (!d.is_array()) throw JsonInputError(std::string("the run list is ") + d.type_name());
      for (const auto& run : d) expect_run(run);
    }
    if (data) *data = std::move(d);
  } catch (const JsonInputError& e) {
    std::fprintf(stderr, "loadwatch run %s: not a loadwatch answer: %s\n", what, e.what());
    return kUsage;
  }
  return 0;
}

std::string start_body(const std::string& name, const std::vector<std::string>& labels) {
  nlohmann::json body{{"name", name}};
  if (!labels.empty()) {
    nlohmann::json map = nlohmann::json::object();
    for (const auto& l : labels) {
      auto eq = l.find('=');
      // Checked by the option's validator; the server validates names and values.
      map[l.substr(0, eq)] = l.substr(eq + 1);
    }
    body["labels"] = map;
  }
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string phase_body(const std::string& name, std::optional<long long> users) {
  nlohmann::json body = nlohmann::json::object();
  if (!name.empty()) body["name"] = name;
  if (users) body["users"] = *users;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string utc(double t) {
  std::time_t s = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

int list_runs(const RunClient& client) {
  nlohmann::json data;
  if (int rc = check("list", client.get("/api/v1/runs"), &data, Expect::run_list)) return rc;
  std::printf("%-40s %-11s %-19s %9s %6s  %s\n", "ID", "STATE", "START (UTC)", "SECONDS", "PHASES",
              "ORIGIN");
  for (const auto& run : data) {
    // expect_run checked every field read here.
    double start = json_number_or(run, "start", 0);
    double end = json_number_or(run, "end", NAN);
    std::string seconds = std::isfinite(end) ? std::to_string(std::lround(end - start)) : "-";
    std::printf("%-40s %-11s %-19s %9s %6zu  %s\n", json_string_or(run, "id").c_str(),
                json_string_or(run, "state").c_str(), utc(start).c_str(), seconds.c_str(),
                json_array_or_empty(run, "phases").size(), json_string_or(run, "origin").c_str());
  }
  return 0;
}

/// What `run exec` runs and how it steps its phases.
struct ExecPlan {
  std::vector<std::string> command;
  std::chrono::milliseconds phase_every{0};  // 0: no phases of its own
  long long users_start = -1;                // -1: the step
  long long users_step = 0;
};

/// Runs the command and opens the planned phases until it exits; returns its exit code.
/// SIGINT and SIGTERM sent to this process are passed on to the command; a Ctrl-C from the
/// terminal is not (the command is in the terminal's process group and gets it already).
int exec_command(const RunClient& client, const ExecPlan& plan, const std::string& run_id) {
  sigset_t watched, old;
  sigemptyset(&watched);
  for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&watched, s);
  sigprocmask(SIG_BLOCK, &watched, &old);

  // Everything the child needs is made before fork(): between fork and exec only
  // async-signal-safe calls are allowed (the parent may have other threads).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("LOADWATCH_URL=", 0) == 0 || kv.rfind("LOADWATCH_RUN_ID=", 0) == 0) continue;
    env_strings.emplace_back(kv);
  }
  // Nested `loadwatch run phase` calls in the command find the loadwatch and the run.
  env_strings.push_back("LOADWATCH_URL=" + client.url());
  env_strings.push_back("LOADWATCH_RUN_ID=" + run_id);
  std::vector<char*> envp, argv;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = plan.command;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string exec_failed = "loadwatch run exec: " + args[0] + ": ";

  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "loadwatch run exec: fork: %s\n", std::strerror(errno));
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return 126;
  }
  if (child == 0) {
    // The caller's mask, but the signals passed on must get through.
    sigset_t child_mask = old;
    for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigdelset(&child_mask, s);
    sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    const char* why = strerror(err);
    [[maybe_unused]] auto n = write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
    n = write(STDERR_FILENO, why, std::strlen(why));
    n = write(STDERR_FILENO, "\n", 1);
    _exit(err == ENOENT ? 127 : 126);
  }

  using Clock = std::chrono::steady_clock;
  auto started = Clock::now();
  long long step = 0;
  std::optional<Clock::time_point> next_phase;
  if (plan.phase_every.count() > 0) next_phase = started;
  int status = 0;
  for (;;) {
    if (next_phase && Clock::now() >= *next_phase) {
      long long users =
          (plan.users_start >= 0 ? plan.users_start : plan.users_step) + step * plan.users_step;
      check("exec (phase)", client.post("/api/v1/runs/current/phases", phase_body("", users)));
      ++step;
      *next_phase += plan.phase_every;
    }
    auto wait = std::chrono::milliseconds(1000);
    if (next_phase) {
      wait = std::min(
          wait, std::chrono::duration_cast<std::chrono::milliseconds>(*next_phase - Clock::now()) +
                    std::chrono::milliseconds(1));
    }
    if (wait.count() < 1) wait = std::chrono::milliseconds(1);
    timespec ts{static_cast<time_t>(wait.count() / 1000),
                static_cast<long>((wait.count() % 1000) * 1'000'000)};
    siginfo_t info{};
    int sig = sigtimedwait(&watched, &info, &ts);
    if ((sig == SIGINT || sig == SIGTERM) && info.si_code != SI_KERNEL) kill(child, sig);
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno == ECHILD) break;
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{
      "Start, phase and stop test runs on a loadwatch (its --web.enable-run-api must be "
      "on), or run a load generator inside a run.",
      "loadwatch run"};
  app.require_subcommand(1);
  RunClientOptions options;
  options.url = env_or("LOADWATCH_URL", "http://127.0.0.1:9797");
  options.user = env_or("LOADWATCH_USER", "");
  options.password_file = env_or("LOADWATCH_PASSWORD_FILE", "");
  std::string timeout = "10s";
  auto common = [&](CLI::App* sub) {
    sub->add_option("--url", options.url,
                    "The loadwatch (default $LOADWATCH_URL, else "
                    "http://127.0.0.1:9797)");
    sub->add_option("--user", options.user, "Basic-auth user (default $LOADWATCH_USER)");
    sub->add_option("--password-file", options.password_file,
                    "File holding the basic-auth password (default $LOADWATCH_PASSWORD_FILE)");
    sub->add_option("--ca-file", options.ca_file, "CA certificates for an https:// URL");
    sub->add_option("--timeout", timeout, "Per request (default 10s)");
  };
  std::string name;
  std::vector<std::string> labels;
  auto label_check = CLI::Validator(
      [](std::string& v) -> std::string {
        auto eq = v.find('=');
        return eq == std::string::npos || eq == 0 ? "want KEY=VALUE" : "";
      },
      "KEY=VALUE");

  CLI::App* start =
      app.add_subcommand("start", "Start a run (ends any run still open); prints its id");
  common(start);
  start->add_option("--name", name, "Run name")->required();
  start->add_option("--label", labels, "KEY=VALUE, repeatable")
      ->check(label_check)
      ->allow_extra_args(false);  // one value each: the command after -- stays whole

  CLI::App* phase = app.add_subcommand("phase", "Open the next phase of the open run");
  common(phase);
  long long users = -1;
  phase->add_option("--name", name, "Phase name (default users=N)");
  phase->add_option("--users", users, "Users of this load step")
      ->check(CLI::Range(0LL, 1'000'000'000LL));

  CLI::App* stop = app.add_subcommand("stop", "End the open run");
  common(stop);

  CLI::App* list = app.add_subcommand("list", "List the runs the loadwatch keeps");
  common(list);

  ExecPlan plan;
  std::string phase_every;
  CLI::App* exec = app.add_subcommand(
      "exec", "Start a run, run CMD, stop the run, and exit with CMD's exit code");
  exec->footer(
      "With --phase-every, a phase opens at once and then every interval, with users = start + "
      "k * step: CMD must step its own load on the same schedule. Or CMD opens its phases "
      "itself with `loadwatch run phase`: LOADWATCH_URL and LOADWATCH_RUN_ID are set for it. "
      "SIGINT and SIGTERM are passed on to CMD. Exit: CMD's code (128 + signal if killed), 2 "
      "if the run could not be started (CMD is then not run).");
  common(exec);
  exec->add_option("--name", name, "Run name")->required();
  exec->add_option("--label", labels, "KEY=VALUE, repeatable")
      ->check(label_check)
      ->allow_extra_args(false);  // one value each: the command after -- stays whole
  exec->add_option("--phase-every", phase_every, "Open a phase this often (e.g. 3m)");
  exec->add_option("--users-step", plan.users_step, "Users added by each phase")
      ->check(CLI::Range(0LL, 1'000'000'000LL));
  exec->add_option("--users-start", plan.users_start,
                   "Users of the first phase (default: the step)")
      ->check(CLI::Range(0LL, 1'000'000'000LL));
  exec->add_option("command", plan.command, "The load generator and its arguments, after --")
      ->required();

  try {
    app.parse(argc, argv);
    options.timeout = parse_duration(timeout);
    if (options.timeout.count() <= 0) throw CLI::ValidationError("--timeout", "must be positive");
    if (!phase_every.empty()) {
      try {
        plan.phase_every = parse_duration(phase_every);
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--phase-every", e.what());
      }
      if (plan.phase_every.count() < 100) {
        throw CLI::ValidationError("--phase-every", "must be at least 100ms");
      }
      if (plan.users_step <= 0) {
        throw CLI::ValidationError("--users-step", "required (> 0) with --phase-every");
      }
    } else if (exec->parsed() && (plan.users_step > 0 || plan.users_start >= 0)) {
      throw CLI::ValidationError("--users-step", "only means something with --phase-every");
    }
    if (phase->parsed() && name.empty() && users < 0) {
      throw CLI::ValidationError("phase", "give --name, --users or both");
    }
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "loadwatch run: --timeout: %s\n", e.what());
    return kUsage;
  }

  std::optional<RunClient> client;
  try {
    client.emplace(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loadwatch run: %s\n", e.what());
    return kUsage;
  }

  nlohmann::json run;
  if (start->parsed()) {
    if (int rc = check("start", client->post("/api/v1/runs", start_body(name, labels)), &run)) {
      return rc;
    }
    std::printf("%s\n", run.value("id", "").c_str());
    return 0;
  }
  if (phase->parsed()) {
    std::optional<long long> u;
    if (users >= 0) u = users;
    if (int rc = check("phase", client->post("/api/v1/runs/current/phases", phase_body(name, u)),
                       &run)) {
      return rc;
    }
    const auto& phases = json_array_or_empty(run, "phases");
    std::printf("%s: phase %s\n", json_string_or(run, "id").c_str(),
                phases.empty() ? "" : json_string_or(phases.back(), "name").c_str());
    return 0;
  }
  if (stop->parsed()) {
    if (int rc = check("stop", client->post("/api/v1/runs/current/stop", "{}"), &run)) return rc;
    std::printf("%s\n", run.value("id", "").c_str());
    return 0;
  }
  if (list->parsed()) return list_runs(*client);

  // exec: no run, no command (fail closed: a CI job must not load a system unobserved).
  if (check("exec (start)", client->post("/api/v1/runs", start_body(name, labels)), &run)) {
    return kUsage;
  }
  std::string id = run.value("id", "");
  std::fprintf(stderr, "loadwatch run exec: run %s started\n", id.c_str());
  int rc = exec_command(*client, plan, id);
  // Another run started meanwhile (it ended ours): leave that one alone.
  nlohmann::json current;
  if (check("exec (stop)", client->get("/api/v1/runs/current"), &current) != 0 ||
      current.value("id", "") != id) {
    std::fprintf(stderr, "loadwatch run exec: run %s is no longer the open run; not stopping\n",
                 id.c_str());
  } else if (check("exec (stop)", client->post("/api/v1/runs/current/stop", "{}"), nullptr,
                   Expect::any) == 0) {
    std::fprintf(stderr, "loadwatch run exec: run %s stopped; command exited %d\n", id.c_str(), rc);
  }
  return rc;
}

}  // namespace loadwatch
