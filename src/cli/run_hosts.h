#pragma once
// What the subcommands of `loadwatch run` share (cli_run.cpp, run_join.cpp): the loadwatches a
// run is driven on, the checked API calls that start, phase and stop it on all of them at one
// instant (each on its own clock), and the guard that stops the run when the client is killed.

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/daemon_clock.h"
#include "cli/run_client.h"

namespace loadwatch::run_command {

inline constexpr int kRefused = 1;
inline constexpr int kUsage = 2;

/// One loadwatch of the run, with its clock's skew against ours when several are driven.
struct Host {
  std::string name;
  std::string spec;  // as --url takes it: [NAME=]URL
  RunClient client;
  ClockSkew skew;
};

/// A run another loadwatch opened, to open on these hosts too: its id, its start on our clock,
/// and every host that takes part (the other loadwatch first).
struct Joined {
  std::string id;
  double start = 0;
  std::vector<std::string> took_part;
};

/// What a successful answer's "data" must be.
enum class Expect { any, run, run_list };

/// The API path acting on run `id` ("/api/v1/runs/ID/phases"), or on the open run.
std::string run_path(const std::string& id, const char* action);
/// The "error" of an API error body, else the body itself (trimmed).
std::string server_message(const RunAnswer& a);
/// Throws JsonInputError unless `run` is a run object as the API writes it, so that reading
/// its fields afterwards cannot fail.
void expect_run(const nlohmann::json& run);
/// Prints why a request failed and returns the exit code; 0 (and the data) when it worked.
/// An answer that is not what a loadwatch sends is exit 2 with a message.
int check(const char* what, const RunAnswer& a, nlohmann::json* data = nullptr,
          Expect expect = Expect::run);
std::string phase_body(const std::string& name, std::optional<long long> users);
/// Measures every host's skew; false (and prints who) when one cannot be measured: a run that
/// cannot be placed on every host's clock is not started.
bool measure_all(std::vector<Host>& hosts, const char* what, std::vector<bool>* reached);
/// The body with "at": the same instant on every host, on that host's clock.
std::string with_at(const std::string& body, double at);

/// Starts run `name` on every host. One host: as the API names it. Several (or `joined`): one
/// id, opened at one instant on all; when one refuses, the run is stopped again on those that
/// had opened it, so no host is left with half a run, and nothing else happens (fail closed).
int start_all(std::vector<Host>& hosts, const char* what, const std::string& name,
              const std::vector<std::string>& labels, nlohmann::json* run,
              const Joined* joined = nullptr);

/// POSTs to `action` of run `id` on every host, at one instant. A host that fails is named and
/// the others still get it (their records stay as whole as they can); the worst exit code is
/// returned. `on_answer` sees each host's run.
int post_all(std::vector<Host>& hosts, const char* what, const std::string& id, const char* action,
             const std::string& body,
             const std::function<void(const Host&, const nlohmann::json&)>& on_answer,
             std::optional<double> at = std::nullopt);

/// After loadwatch itself dies (SIGKILL, OOM), kills CMD's process group and stops the run by
/// running `loadwatch run stop --run ID`. A child of its own session, so a terminal's signals
/// do not end it with loadwatch; it blocks on a pipe that only loadwatch writes to. Before a
/// normal exit loadwatch writes one byte: the guard then leaves without doing anything.
struct Guard {
  pid_t pid = -1;
  int fd = -1;  // the write end; closing it without the byte means loadwatch is gone

  /// Tells the guard CMD's process group, once CMD is started; 0 when there is no command
  /// (run join): the guard then only stops the run.
  void watch(pid_t group);
  void release();
};

/// Started before CMD, so that no moment of CMD's life is unguarded. `client_args` are the
/// `run stop` flags that reach the hosts as this process does.
Guard start_guard(const std::string& run_id, const std::vector<std::string>& client_args);

}  // namespace loadwatch::run_command
