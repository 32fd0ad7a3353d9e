#include "collectors/runs.h"

#include "runs/run_book.h"

namespace loadwatch {

namespace {

void add_run_metrics(const RunBook::Exposed& runs, MetricSink& out) {
  const auto& open = runs.current;
  if (open) {
    out.gauge("loadwatch_run_info",
              "1 for the run in progress and its current phase (phase=\"\" before the first); "
              "run is the run id.",
              {{"run", open->id},
               {"name", open->name},
               {"origin", open->origin},
               {"phase", open->phase ? open->phase->name : ""}},
              1);
  }
  const char* start_help =
      "Unix time the run started: the run in progress and the last finished run.";
  if (open)
    out.gauge("loadwatch_run_start_timestamp_seconds", start_help, {{"run", open->id}},
              open->start);
  if (const auto& done = runs.last_finished) {
    out.gauge("loadwatch_run_start_timestamp_seconds", start_help, {{"run", done->id}},
              done->start);
    out.gauge("loadwatch_run_end_timestamp_seconds",
              "Unix time the last finished (or interrupted) run ended.", {{"run", done->id}},
              done->end);
  }
  if (open && open->phase) {
    const RunPhase& p = *open->phase;
    out.gauge("loadwatch_run_phase_start_timestamp_seconds",
              "Unix time the current phase of the run in progress started.",
              {{"run", open->id}, {"phase", p.name}}, p.start);
    if (p.users) {
      out.gauge("loadwatch_run_phase_users",
                "Users of the current phase of the run in progress, as its start declared.",
                {{"run", open->id}, {"phase", p.name}}, static_cast<double>(*p.users));
    }
  }
}

class RunsCollector : public Collector {
 public:
  explicit RunsCollector(RunBook* book) : book_(book) {}
  void collect(SampleContext& ctx, MetricSink& out) override {
    if (!book_) return;
    book_->tick(ctx.now);
    add_run_metrics(book_->exposed(), out);
  }
  void reconfigure(const CollectorEnv& env) override { book_ = env.run_book; }

 private:
  RunBook* book_;
};

}  // namespace

std::unique_ptr<Collector> make_runs_collector(const CollectorEnv& env) {
  return std::make_unique<RunsCollector>(env.run_book);
}

}  // namespace loadwatch
