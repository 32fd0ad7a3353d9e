#include "cli/run_join.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "util/bounded_json.h"
#include "util/unix_time.h"

namespace loadwatch::run_command {

namespace {

/// Sleeps `d`, or until SIGINT or SIGTERM (blocked by the caller); returns the signal or 0.
int sleep_or_signal(std::chrono::milliseconds d) {
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  timespec ts{static_cast<time_t>(d.count() / 1000),
              static_cast<long>((d.count() % 1000) * 1'000'000)};
  int sig = sigtimedwait(&watched, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

/// Reads run `id` (empty: the open run) from `from`: 1 it is there (`run` set), 0 it is not
/// (404), -1 no usable answer (`why` set).
int read_source_run(const Host& from, const std::string& id, nlohmann::json& run,
                    std::string* why) {
  RunAnswer a = from.client.get(id.empty() ? "/api/v1/runs/current" : "/api/v1/runs/" + id);
  if (a.reached && a.status == 404) return 0;
  if (!a.reached || a.status != 200) {
    *why = a.reached ? "HTTP " + std::to_string(a.status) : a.error;
    return -1;
  }
  try {
    nlohmann::json j = parse_bounded_json(a.body);
    run = j.is_object() && j.contains("data") ? j["data"] : nlohmann::json();
    expect_run(run);
    for (const auto& p : json_array_or_empty(run, "phases")) json_number_or(p, "start", 0);
  } catch (const JsonInputError& e) {
    *why = std::string("not a loadwatch answer: ") + e.what();
    return -1;
  }
  return 1;
}

}  // namespace

int join_run(Host& from, std::vector<Host>& hosts, const JoinPlan& plan) {
  sigset_t watched, old;
  sigemptyset(&watched);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  sigprocmask(SIG_BLOCK, &watched, &old);
  struct Restore {
    sigset_t mask;
    ~Restore() { sigprocmask(SIG_SETMASK, &mask, nullptr); }
  } restore{old};

  nlohmann::json run;
  std::string why;
  bool said = false;
  auto deadline = std::chrono::steady_clock::now() + plan.wait;
  for (;;) {
    int found = read_source_run(from, plan.run_id, run, &why);
    if (found == 1) break;
    if (found == 0 && !plan.run_id.empty()) {
      std::fprintf(stderr, "loadwatch run join: %s has no run %s\n", from.name.c_str(),
                   plan.run_id.c_str());
      return kRefused;
    }
    if (!said) {
      std::fprintf(stderr, "loadwatch run join: waiting for a run on %s%s\n", from.name.c_str(),
                   found < 0 ? (" (" + why + ")").c_str() : "");
      said = true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr, "loadwatch run join: no run opened on %s in time (--wait)\n",
                   from.name.c_str());
      return found < 0 ? kUsage : kRefused;
    }
    if (int sig = sleep_or_signal(plan.poll)) return 128 + sig;
  }
  // Its instants on our clock: the other loadwatch's minus its skew.
  auto skew = measure_skew(from.client, &why);
  if (!skew) {
    std::fprintf(stderr, "loadwatch run join: %s: %s\n", from.name.c_str(), why.c_str());
    return kUsage;
  }
  auto ours = [&](double t) { return t - skew->seconds; };
  Joined joined{json_string_or(run, "id"), ours(json_number_or(run, "start", 0)), {from.name}};
  for (const Host& h : hosts) joined.took_part.push_back(h.name);
  std::vector<std::string> labels;
  if (run.contains("labels") && run["labels"].is_object()) {
    for (const auto& [k, v] : run["labels"].items()) {
      if (v.is_string()) labels.push_back(k + "=" + v.get<std::string>());
    }
  }
  // Guarded before the first host opens the run: a join killed at any moment after leaves no
  // host with the run open. The guard has no command to kill, only the run to stop.
  struct Released {
    Guard guard;
    ~Released() { guard.release(); }
  } guarded{start_guard(joined.id, plan.stop_args)};
  guarded.guard.watch(0);
  nlohmann::json started;
  if (int rc = start_all(hosts, "join (start)", json_string_or(run, "name"), labels, &started,
                         &joined)) {
    return rc;
  }
  std::printf("%s\n", joined.id.c_str());
  std::fflush(stdout);
  // The other loadwatch's record learns the hosts too (its run was opened by no client). Its
  // run API may be read-only: the others still follow the run.
  nlohmann::json took_part{{"hosts", joined.took_part}};
  RunAnswer told =
      from.client.post("/api/v1/runs/" + joined.id + "/hosts",
                       took_part.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!told.reached || told.status != 200) {
    std::fprintf(stderr, "loadwatch run join: warning: %s keeps no hosts with the run: %s\n",
                 from.name.c_str(),
                 told.reached ? server_message(told).c_str() : told.error.c_str());
  }
  std::fprintf(stderr, "loadwatch run join: run %s of %s joined on %zu loadwatches\n",
               joined.id.c_str(), from.name.c_str(), hosts.size());

  int worst = 0;
  std::size_t copied = 0;
  auto last_read = std::chrono::steady_clock::now();
  double last_seen = unix_now();
  auto stop_here = [&](double at) {
    return std::max(worst, post_all(hosts, "join (stop)", joined.id, "stop", "{}", nullptr, at));
  };
  for (;;) {
    const auto& phases = json_array_or_empty(run, "phases");
    for (; copied < phases.size(); ++copied) {
      const auto& p = phases[copied];
      std::optional<long long> users;
      if (p.contains("users") && p["users"].is_number_integer())
        users = p["users"].get<long long>();
      worst = std::max(worst, post_all(hosts, "join (phase)", joined.id, "phases",
                                       phase_body(json_string_or(p, "name"), users), nullptr,
                                       ours(json_number_or(p, "start", 0))));
    }
    if (json_string_or(run, "state") != "running") {
      std::fprintf(stderr, "loadwatch run join: run %s ended on %s\n", joined.id.c_str(),
                   from.name.c_str());
      return stop_here(ours(json_number_or(run, "end", skew->seconds + unix_now())));
    }
    if (int sig = sleep_or_signal(plan.poll)) {
      stop_here(unix_now());
      return 128 + sig;
    }
    int found = read_source_run(from, joined.id, run, &why);
    if (found == 1) {
      last_read = std::chrono::steady_clock::now();
      last_seen = unix_now();
    } else if (found == 0) {
      std::fprintf(stderr, "loadwatch run join: run %s left %s; stopped here\n", joined.id.c_str(),
                   from.name.c_str());
      stop_here(unix_now());
      return kRefused;
    } else if (std::chrono::steady_clock::now() - last_read > plan.lost_after) {
      std::fprintf(stderr,
                   "loadwatch run join: %s unreachable (%s); the run ends here when "
                   "it was last seen\n",
                   from.name.c_str(), why.c_str());
      stop_here(last_seen);
      return kUsage;
    }
  }
}

}  // namespace loadwatch::run_command
