#include "cli/cli_run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client_flags.h"
#include "cli/command_line.h"
#include "cli/daemon_clock.h"
#include "cli/run_client.h"
#include "cli/run_hosts.h"
#include "cli/run_join.h"
#include "config/config.h"
#include "runs/run.h"
#include "util/bounded_json.h"
#include "util/unix_time.h"

namespace loadwatch {

using namespace run_command;

namespace {

constexpr int kMaxListPages = 100;

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
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

std::string utc(double t) {
  std::time_t s = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

/// "start" for one loadwatch, "start: gen-2" for one of several: what messages are about.
std::string what_on(const char* what, const std::vector<Host>& hosts, const Host& h) {
  return hosts.size() > 1 ? std::string(what) + ": " + h.name : std::string(what);
}

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

}  // namespace

namespace run_command {

std::string run_path(const std::string& id, const char* action) {
  return "/api/v1/runs/" + (id.empty() ? std::string("current") : id) + "/" + action;
}

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

int check(const char* what, const RunAnswer& a, nlohmann::json* data, Expect expect) {
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

std::string phase_body(const std::string& name, std::optional<long long> users) {
  nlohmann::json body = nlohmann::json::object();
  if (!name.empty()) body["name"] = name;
  if (users) body["users"] = *users;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool measure_all(std::vector<Host>& hosts, const char* what, std::vector<bool>* reached) {
  bool all = true;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    std::string why;
    auto skew = measure_skew(hosts[i].client, &why);
    if (reached) (*reached)[i] = skew.has_value();
    if (!skew) {
      std::fprintf(stderr, "loadwatch run %s: %s: %s\n", what, hosts[i].name.c_str(), why.c_str());
      all = false;
      continue;
    }
    hosts[i].skew = *skew;
  }
  return all;
}

std::string with_at(const std::string& body, double at) {
  nlohmann::json j = nlohmann::json::parse(body);
  j["at"] = std::round(at * 1000) / 1000;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int start_all(std::vector<Host>& hosts, const char* what, const std::string& name,
              const std::vector<std::string>& labels, nlohmann::json* run, const Joined* joined) {
  std::string body = start_body(name, labels);
  if (hosts.size() == 1 && !joined) {
    return check(what, hosts[0].client.post("/api/v1/runs", body), run);
  }
  if (!measure_all(hosts, what, nullptr)) return kUsage;
  double t = joined ? joined->start : unix_now();
  std::string id = joined ? joined->id : make_run_id(t, name);
  nlohmann::json b = nlohmann::json::parse(body);
  b["id"] = id;
  // Each loadwatch keeps who took part, so its own report names the other hosts.
  b["hosts"] = nlohmann::json::array();
  if (joined) {
    for (const std::string& h : joined->took_part) b["hosts"].push_back(h);
  } else {
    for (const Host& h : hosts) b["hosts"].push_back(h.name);
  }
  body = b.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    Host& h = hosts[i];
    int rc = check(what_on(what, hosts, h).c_str(),
                   h.client.post("/api/v1/runs", with_at(body, t + h.skew.seconds)), run);
    if (rc == 0) continue;
    std::string undone;
    double now = unix_now();
    for (std::size_t k = 0; k < i; ++k) {
      RunAnswer a =
          hosts[k].client.post(run_path(id, "stop"), with_at("{}", now + hosts[k].skew.seconds));
      undone += (undone.empty() ? "" : ", ") + hosts[k].name +
                (a.reached && a.status / 100 == 2 ? "" : " (failed: stop it there by hand)");
    }
    std::fprintf(stderr, "loadwatch run %s: not started: %s refused it%s%s\n", what, h.name.c_str(),
                 undone.empty() ? "" : "; stopped again on ", undone.c_str());
    return rc;
  }
  return 0;
}

int post_all(std::vector<Host>& hosts, const char* what, const std::string& id, const char* action,
             const std::string& body,
             const std::function<void(const Host&, const nlohmann::json&)>& on_answer,
             std::optional<double> at) {
  std::vector<bool> reached(hosts.size(), true);
  int worst = 0;
  bool placed = hosts.size() > 1 || at;  // each host gets the instant on its own clock
  if (placed && !measure_all(hosts, what, &reached)) worst = kUsage;
  double t = at.value_or(unix_now());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (!reached[i]) continue;
    Host& h = hosts[i];
    std::string b = placed ? with_at(body, t + h.skew.seconds) : body;
    nlohmann::json run;
    int rc = check(what_on(what, hosts, h).c_str(), h.client.post(run_path(id, action), b), &run);
    if (rc == 0 && on_answer) on_answer(h, run);
    worst = std::max(worst, rc);
  }
  return worst;
}

void Guard::watch(pid_t group) {
  if (pid < 0) return;
  [[maybe_unused]] auto n = write(fd, &group, sizeof group);
}

void Guard::release() {
  if (pid < 0) return;
  [[maybe_unused]] auto n = write(fd, "D", 1);
  close(fd);
  waitpid(pid, nullptr, 0);
  pid = -1;
}

Guard start_guard(const std::string& run_id, const std::vector<std::string>& client_args) {
  Guard guard;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return guard;
  // Made before fork(): the guard only makes async-signal-safe calls, then exec().
  std::vector<std::string> args = {"loadwatch", "run", "stop", "--run", run_id};
  args.insert(args.end(), client_args.begin(), client_args.end());
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
    pid_t group = 0;  // 0: a client with no command to kill (run join)
    bool known = read_fully(fds[0], &group, sizeof group) == sizeof group;
    char byte = 0;
    if (known && read_fully(fds[0], &byte, 1) == 1) _exit(0);  // loadwatch stops the run itself
    if (known && group > 0) kill(-group, SIGKILL);
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

}  // namespace run_command

namespace {

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

/// Runs the command and opens the planned phases until it exits; returns its exit code. The
/// command runs in a process group of its own: SIGINT and SIGTERM sent to this process (a
/// terminal's Ctrl-C too) are passed on to that group; it is killed when loadwatch dies.
int exec_command(std::vector<Host>& hosts, const ExecPlan& plan, const std::string& run_id,
                 const std::vector<std::string>& client_args) {
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
  std::string urls;
  for (const Host& h : hosts) {
    if (!urls.empty()) urls += ',';
    urls += h.spec;
  }
  env_strings.push_back("LOADWATCH_URL=" + urls);
  env_strings.push_back("LOADWATCH_RUN_ID=" + run_id);
  std::vector<char*> envp, argv;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = plan.command;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string exec_failed = "loadwatch run exec: " + args[0] + ": ";

  Guard guard = start_guard(run_id, client_args);
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
      post_all(hosts, "exec (phase)", run_id, "phases", phase_body("", users), nullptr);
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
  CommandLine app{
      "Start, phase and stop test runs on a loadwatch (its --web.enable-run-api must be "
      "on), or on the loadwatches of every host of a test at once, or run a load generator "
      "inside a run.",
      "loadwatch run"};
  app.require_subcommand();
  ClientFlags flags;
  flags.env_defaults = true;
  auto common = [&](CommandLine& sub) {
    add_client_flags(sub, flags, "The loadwatch (several: the same run on each)");
  };
  std::string name;
  std::vector<std::string> labels;
  auto label_check = [](std::string& v) -> std::string {
    auto eq = v.find('=');
    return eq == std::string::npos || eq == 0 ? "want KEY=VALUE" : "";
  };
  auto run_id_check = [](std::string& v) -> std::string {
    return plausible_run_id(v) ? "" : "not a run id (YYYYMMDDTHHMMSS-name)";
  };

  CommandLine& start =
      app.subcommand("start", "Start a run (ends any run still open); prints its id");
  common(start);
  start.option("--name", name, "Run name").required();
  start.option("--label", labels, "KEY=VALUE, repeatable")
      .check(label_check, "KEY=VALUE")
      .one_value_each();  // the command after -- stays whole

  std::string run_id = env_or("LOADWATCH_RUN_ID", "");
  auto run_option = [&](CommandLine& sub) {
    sub.option("--run", run_id,
               "The run to act on, as `run start` printed it (default $LOADWATCH_RUN_ID); "
               "refused unless it is the open run")
        .check(run_id_check, "RUN_ID");
  };
  CommandLine& phase = app.subcommand("phase", "Open the next phase of a run");
  common(phase);
  run_option(phase);
  long long users = -1;
  phase.option("--name", name, "Phase name (default users=N)");
  phase.option("--users", users, "Users of this load step").range(0LL, 1'000'000'000LL);

  CommandLine& stop = app.subcommand("stop", "End a run");
  common(stop);
  run_option(stop);

  CommandLine& list = app.subcommand("list", "List the runs the loadwatch keeps");
  common(list);

  ExecPlan plan;
  std::string phase_every;
  CommandLine& exec =
      app.subcommand("exec", "Start a run, run CMD, stop the run, and exit with CMD's exit code");
  exec.footer(
      "With --phase-every, a phase opens at once and then every interval, with users = start + "
      "k * step: CMD must step its own load on the same schedule. Or CMD opens its phases "
      "itself with `loadwatch run phase`: LOADWATCH_URL and LOADWATCH_RUN_ID are set for it. "
      "CMD runs in a process group of its own: SIGINT and SIGTERM are passed on to it, and if "
      "loadwatch is killed, a guard kills CMD and stops the run. Exit: CMD's code (128 + "
      "signal if killed), 2 if the run could not be started (CMD is then not run).");
  common(exec);
  exec.option("--name", name, "Run name").required();
  exec.option("--label", labels, "KEY=VALUE, repeatable")
      .check(label_check, "KEY=VALUE")
      .one_value_each();  // the command after -- stays whole
  exec.option("--phase-every", phase_every, "Open a phase this often (e.g. 3m)");
  exec.option("--users-step", plan.users_step, "Users added by each phase")
      .range(0LL, 1'000'000'000LL);
  exec.option("--users-start", plan.users_start, "Users of the first phase (default: the step)")
      .range(0LL, 1'000'000'000LL);
  exec.option("command", plan.command, "The load generator and its arguments, after --").required();

  JoinPlan join_plan;
  std::string join_from, join_wait = "10m";
  CommandLine& join = app.subcommand(
      "join", "Open the run another loadwatch has (say, inferred from Locust) on these hosts too");
  join.footer(
      "Waits for a run on --from (the open one, or --run), opens it on every --url with its id, "
      "start, labels and phases at the same instants (each on its own clock), and copies each "
      "new phase and its end as they appear. Prints the id. Exit: 0 when the run ended there; "
      "1 or 2 when it was refused, lost or never came (the run is then stopped here); 128 + "
      "signal on SIGINT/SIGTERM (the run is stopped here too).");
  common(join);
  join.option("--from", join_from, "The loadwatch whose run to join: [NAME=]URL").required();
  join.option("--run", join_plan.run_id, "Its run to join (default: the open one, or the next)")
      .check(run_id_check, "RUN_ID");
  join.option("--wait", join_wait, "How long to wait for a run to open there (10m)");

  // A bad command line, and the checks across flags below, print as CLI11 prints a usage error.
  if (auto rc = app.parse(argc, argv)) return *rc == 0 ? 0 : kUsage;
  auto bad_flag = [&](const std::string& flag, const std::string& message) {
    app.fail(flag, message);
    return kUsage;
  };
  if (join.parsed()) {
    try {
      join_plan.wait = parse_duration(join_wait);
    } catch (const std::invalid_argument& e) {
      return bad_flag("--wait", e.what());
    }
    if (flags.urls.empty() && flags.url_file.empty()) {
      return bad_flag("--url", "join needs the loadwatches to open the run on");
    }
    flags.urls.insert(flags.urls.begin(), join_from);  // checked with the others: one name each
  }
  if (!phase_every.empty()) {
    try {
      plan.phase_every = parse_duration(phase_every);
    } catch (const std::invalid_argument& e) {
      return bad_flag("--phase-every", e.what());
    }
    if (plan.phase_every.count() < 100) return bad_flag("--phase-every", "must be at least 100ms");
    if (plan.users_step <= 0) {
      return bad_flag("--users-step", "required (> 0) with --phase-every");
    }
  } else if (exec.parsed() && (plan.users_step > 0 || plan.users_start >= 0)) {
    return bad_flag("--users-step", "only means something with --phase-every");
  }
  if (phase.parsed() && name.empty() && users < 0) {
    return bad_flag("phase", "give --name, --users or both");
  }
  std::vector<Daemon> daemons;
  try {
    daemons = resolve_daemons(flags);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "loadwatch run: %s\n", e.what());
    return kUsage;
  }

  std::vector<Host> hosts;
  try {
    for (const Daemon& d : daemons) {
      std::string spec = (d.named ? d.name + "=" : std::string()) + d.options.url;
      hosts.push_back(Host{d.name, spec, RunClient(d.options), {}});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loadwatch run: %s\n", e.what());
    return kUsage;
  }
  const bool several = hosts.size() > 1;
  if (join.parsed()) {
    std::vector<Host> joining;  // the hosts after --from
    for (std::size_t i = 1; i < hosts.size(); ++i) joining.push_back(std::move(hosts[i]));
    // The guard stops the run where join opened it, never on --from (its run is its own).
    join_plan.stop_args =
        client_args(std::vector<Daemon>(daemons.begin() + 1, daemons.end()), flags);
    return join_run(hosts.front(), joining, join_plan);
  }

  nlohmann::json run;
  if (start.parsed()) {
    if (int rc = start_all(hosts, "start", name, labels, &run)) return rc;
    std::printf("%s\n", json_string_or(run, "id").c_str());
    return 0;
  }
  if (phase.parsed() || stop.parsed()) {
    const char* what = phase.parsed() ? "phase" : "stop";
    if (!plausible_run_id(run_id)) run_id.clear();  // a bad $LOADWATCH_RUN_ID
    if (run_id.empty() && several) {
      // Whichever run is open may differ from host to host: never guess across hosts.
      std::fprintf(stderr, "loadwatch run %s: several loadwatches need --run\n", what);
      return kUsage;
    }
    if (run_id.empty()) {
      std::fprintf(stderr, "loadwatch run %s: no --run: acting on whichever run is open\n", what);
    }
    std::optional<long long> u;
    if (users >= 0) u = users;
    std::string body = phase.parsed() ? phase_body(name, u) : "{}";
    return post_all(hosts, what, run_id, phase.parsed() ? "phases" : "stop", body,
                    [&](const Host& h, const nlohmann::json& r) {
                      std::string prefix = several ? h.name + ": " : "";
                      if (!phase.parsed()) {
                        std::printf("%s%s\n", prefix.c_str(), json_string_or(r, "id").c_str());
                        return;
                      }
                      const auto& phases = json_array_or_empty(r, "phases");
                      std::printf(
                          "%s%s: phase %s\n", prefix.c_str(), json_string_or(r, "id").c_str(),
                          phases.empty() ? "" : json_string_or(phases.back(), "name").c_str());
                    });
  }
  if (list.parsed()) {
    int worst = 0;
    for (const Host& h : hosts) {
      if (several)
        std::printf("%s== %s (%s)\n", &h == &hosts[0] ? "" : "\n", h.name.c_str(),
                    h.client.url().c_str());
      worst = std::max(worst, list_runs(h.client));
    }
    return worst;
  }

  // exec: no run, no command (fail closed: a CI job must not load a system unobserved).
  if (start_all(hosts, "exec (start)", name, labels, &run)) return kUsage;
  std::string id = json_string_or(run, "id");
  std::fprintf(stderr, "loadwatch run exec: run %s started%s\n", id.c_str(),
               several ? (" on " + std::to_string(hosts.size()) + " loadwatches").c_str() : "");
  // What the guard needs to stop the run as this process would.
  int rc = exec_command(hosts, plan, id, client_args(daemons, flags));
  // Stopped by id: when another run started meanwhile (it ended ours), that one is left alone.
  std::vector<bool> reached(hosts.size(), true);
  if (several) measure_all(hosts, "exec (stop)", &reached);
  double t = unix_now();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (!reached[i]) continue;
    const Host& h = hosts[i];
    std::string where = several ? " on " + h.name : "";
    RunAnswer stopped =
        h.client.post(run_path(id, "stop"), several ? with_at("{}", t + h.skew.seconds) : "{}");
    if (stopped.reached && stopped.status == 409) {
      std::fprintf(stderr, "loadwatch run exec: run %s is no longer the open run%s; not stopping\n",
                   id.c_str(), where.c_str());
    } else if (check(what_on("exec (stop)", hosts, h).c_str(), stopped, nullptr, Expect::any) ==
               0) {
      std::fprintf(stderr, "loadwatch run exec: run %s stopped%s; command exited %d\n", id.c_str(),
                   where.c_str(), rc);
    }
  }
  return rc;
}

}  // namespace loadwatch
