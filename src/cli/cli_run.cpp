#include "cli/cli_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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

#include "cli/run_client.h"
#include "config/config.h"
#include "runs/run.h"
#include "util/bounded_json.h"

namespace loadwatch {

namespace {

constexpr int kRefused = 1;
constexpr int kUsage = 2;
constexpr int kMaxListPages = 100;

/// The API path acting on run `id` ("/api/v1/runs/ID/phases"), or on the open run.
std::string run_path(const std::string& id, const char* action) {
  return "/api/v1/runs/" + (id.empty() ? std::string("current") : id) + "/" + action;
}

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
  std::printf("%-40s %-11s %-19s %9s %6s  %s\n", "ID", "STATE", "START (UTC)", "SECONDS", "PHASES",
              "ORIGIN");
  // Page by page, as the API hands them out; a loadwatch keeps at most a few hundred runs.
  std::string token;
  for (int page = 0; page < kMaxListPages; ++page) {
    std::string path = "/api/v1/runs?limit=500";
    if (!token.empty()) path += "&page_token=" + token;
    RunAnswer answer = client.get(path);
    nlohmann::json data;
    if (int rc = check("list", answer, &data, Expect::run_list)) return rc;
    for (const auto& run : data) {
      // expect_run checked every field read here.
      double start = json_number_or(run, "start", 0);
      double end = json_number_or(run, "end", NAN);
      std::string seconds = std::isfinite(end) ? std::to_string(std::lround(end - start)) : "-";
      double phases = json_number_or(run, "phase_count", 0);
      std::printf("%-40s %-11s %-19s %9s %6.0f  %s\n", json_string_or(run, "id").c_str(),
                  json_string_or(run, "state").c_str(), utc(start).c_str(), seconds.c_str(),
                  phases >= 0 && phases < 1e9 ? phases : 0.0,
                  json_string_or(run, "origin").c_str());
    }
    std::string next;
    try {
      next = json_string_or(parse_bounded_json(answer.body), "next_page_token");
    } catch (const JsonInputError&) {
      return 0;  // check() parsed the same answer: not reached
    }
    if (next.empty() || !plausible_run_id(next)) return 0;
    token = next;
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

/// After loadwatch itself dies (SIGKILL, OOM), kills CMD's process group and stops the run by
/// running `loadwatch run stop --run ID`. A child of its own session, so a terminal's signals
/// do not end it with loadwatch; it blocks on a pipe that only loadwatch writes to. Before a
/// normal exit loadwatch writes one byte: the guard then leaves without doing anything.
struct Guard {
  pid_t pid = -1;
  int fd = -1;  // the write end; closing it without the byte means loadwatch is gone

  /// Tells the guard CMD's process group, once CMD is started.
  void watch(pid_t group) {
    if (pid < 0) return;
    [[maybe_unused]] auto n = write(fd, &group, sizeof group);
  }
  void release() {
    if (pid < 0) return;
    [[maybe_unused]] auto n = write(fd, "D", 1);
    close(fd);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

/// Reads up to `size` bytes, through EINTR; returns how many came before EOF.
std::size_t read_fully(int fd, void* buf, std::size_t size) {
  std::size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, static_cast<char*>(buf) + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

/// Started before CMD, so that no moment of CMD's life is unguarded.
Guard start_guard(const RunClient& client, const std::string& run_id,
                  const std::vector<std::string>& stop_args) {
  Guard guard;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return guard;
  // Made before fork(): the guard only makes async-signal-safe calls, then exec().
  std::vector<std::string> args = {"loadwatch", "run",  "stop",
                                   "--run",     run_id, "--url=" + client.url()};
  args.insert(args.end(), stop_args.begin(), stop_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    close(fds[0]);
    close(fds[1]);
    return guard;
  }
  self[len] = '\0';
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return guard;
  }
  if (pid == 0) {
    close(fds[1]);
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) signal(s, SIG_IGN);
    pid_t group = 0;
    bool known = read_fully(fds[0], &group, sizeof group) == sizeof group && group > 0;
    char byte = 0;
    if (known && read_fully(fds[0], &byte, 1) == 1) _exit(0);  // loadwatch stops the run itself
    if (known) kill(-group, SIGKILL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(self, argv.data());
    _exit(127);
  }
  close(fds[0]);
  guard.pid = pid;
  guard.fd = fds[1];
  return guard;
}

/// Runs the command and opens the planned phases until it exits; returns its exit code. The
/// command runs in a process group of its own: SIGINT and SIGTERM sent to this process (a
/// terminal's Ctrl-C too) are passed on to that group; it is killed when loadwatch dies.
int exec_command(const RunClient& client, const ExecPlan& plan, const std::string& run_id,
                 const std::vector<std::string>& stop_args) {
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

  Guard guard = start_guard(client, run_id, stop_args);
  const pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "loadwatch run exec: fork: %s\n", std::strerror(errno));
    guard.release();
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return 126;
  }
  if (child == 0) {
    // Its own process group, so the whole of it can be signalled; and killed with loadwatch,
    // even by SIGKILL. The parent may have died before prctl: then it is already orphaned.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL);
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
  setpgid(child, child);  // as the child does: whichever runs first
  guard.watch(child);

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
      // Named by id: a phase never lands in a run another client opened meanwhile.
      check("exec (phase)", client.post(run_path(run_id, "phases"), phase_body("", users)));
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
    // CMD has its own process group: the terminal's Ctrl-C reaches only loadwatch, which
    // passes it on to the whole group, as it does a SIGTERM.
    if (sig == SIGINT || sig == SIGTERM) kill(-child, sig);
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno == ECHILD) break;
  }
  guard.release();
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

  std::string run_id = env_or("LOADWATCH_RUN_ID", "");
  auto run_option = [&](CLI::App* sub) {
    sub->add_option("--run", run_id,
                    "The run to act on, as `run start` printed it (default $LOADWATCH_RUN_ID); "
                    "refused unless it is the open run")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
              return plausible_run_id(v) ? "" : "not a run id (YYYYMMDDTHHMMSS-name)";
            },
            "RUN_ID"));
  };
  CLI::App* phase = app.add_subcommand("phase", "Open the next phase of a run");
  common(phase);
  run_option(phase);
  long long users = -1;
  phase->add_option("--name", name, "Phase name (default users=N)");
  phase->add_option("--users", users, "Users of this load step")
      ->check(CLI::Range(0LL, 1'000'000'000LL));

  CLI::App* stop = app.add_subcommand("stop", "End a run");
  common(stop);
  run_option(stop);

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
      "CMD runs in a process group of its own: SIGINT and SIGTERM are passed on to it, and if "
      "loadwatch is killed, a guard kills CMD and stops the run. Exit: CMD's code (128 + "
      "signal if killed), 2 if the run could not be started (CMD is then not run).");
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
    std::printf("%s\n", json_string_or(run, "id").c_str());
    return 0;
  }
  if (phase->parsed()) {
    std::optional<long long> u;
    if (users >= 0) u = users;
    if (!plausible_run_id(run_id)) run_id.clear();  // a bad $LOADWATCH_RUN_ID
    if (run_id.empty()) {
      std::fprintf(stderr, "loadwatch run phase: no --run: acting on whichever run is open\n");
    }
    if (int rc =
            check("phase", client->post(run_path(run_id, "phases"), phase_body(name, u)), &run)) {
      return rc;
    }
    const auto& phases = json_array_or_empty(run, "phases");
    std::printf("%s: phase %s\n", json_string_or(run, "id").c_str(),
                phases.empty() ? "" : json_string_or(phases.back(), "name").c_str());
    return 0;
  }
  if (stop->parsed()) {
    if (!plausible_run_id(run_id)) run_id.clear();
    if (run_id.empty()) {
      std::fprintf(stderr, "loadwatch run stop: no --run: acting on whichever run is open\n");
    }
    if (int rc = check("stop", client->post(run_path(run_id, "stop"), "{}"), &run)) return rc;
    std::printf("%s\n", json_string_or(run, "id").c_str());
    return 0;
  }
  if (list->parsed()) return list_runs(*client);

  // exec: no run, no command (fail closed: a CI job must not load a system unobserved).
  if (check("exec (start)", client->post("/api/v1/runs", start_body(name, labels)), &run)) {
    return kUsage;
  }
  std::string id = json_string_or(run, "id");
  std::fprintf(stderr, "loadwatch run exec: run %s started\n", id.c_str());
  // What the guard needs to stop the run as this process would.
  std::vector<std::string> stop_args = {"--timeout=" + timeout};
  if (!options.user.empty()) stop_args.push_back("--user=" + options.user);
  if (!options.password_file.empty())
    stop_args.push_back("--password-file=" + options.password_file);
  if (!options.ca_file.empty()) stop_args.push_back("--ca-file=" + options.ca_file);
  int rc = exec_command(*client, plan, id, stop_args);
  // Stopped by id: when another run started meanwhile (it ended ours), that one is left alone.
  RunAnswer stopped = client->post(run_path(id, "stop"), "{}");
  if (stopped.reached && stopped.status == 409) {
    std::fprintf(stderr, "loadwatch run exec: run %s is no longer the open run; not stopping\n",
                 id.c_str());
  } else if (check("exec (stop)", stopped, nullptr, Expect::any) == 0) {
    std::fprintf(stderr, "loadwatch run exec: run %s stopped; command exited %d\n", id.c_str(), rc);
  }
  return rc;
}

}  // namespace loadwatch
