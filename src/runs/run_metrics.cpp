#include "runs/run_metrics.h"

namespace loadwatch {

void add_run_metrics(const RunBook::Exposed& runs, MetricSink& out) {
  if (const auto& run = runs.current) {
    std::string phase = run->phases.empty() ? "" : run->phases.back().name;
    out.gauge("loadwatch_run_info",
              "1 for the run in progress and its current phase (phase=\"\" before the first); "
              "run is the run id.",
              {{"run", run->id}, {"name", run->name}, {"origin", run->origin}, {"phase", phase}},
              1);
  }
  auto start = [&](const Run& run) {
    out.gauge("loadwatch_run_start_timestamp_seconds",
              "Unix time the run started: the run in progress and the last finished run.",
              {{"run", run.id}}, run.start);
  };
  if (runs.current) start(*runs.current);
  if (runs.last_finished) start(*runs.last_finished);
  if (const auto& run = runs.last_finished) {
    out.gauge("loadwatch_run_end_timestamp_seconds",
              "Unix time the last finished (or interrupted) run ended.", {{"run", run->id}},
              run->end.value_or(run->start));
  }
  if (const auto& run = runs.current; run && !run->phases.empty()) {
    const RunPhase& p = run->phases.back();
    out.gauge("loadwatch_run_phase_start_timestamp_seconds",
              "Unix time the current phase of the run in progress started.",
              {{"run", run->id}, {"phase", p.name}}, p.start);
    if (p.users) {
      out.gauge("loadwatch_run_phase_users",
                "Users of the current phase of the run in progress, as its start declared.",
                {{"run", run->id}, {"phase", p.name}}, static_cast<double>(*p.users));
    }
  }
}

}  // namespace loadwatch
