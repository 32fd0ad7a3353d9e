#include "runs/run_book.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "util/log.h"
#include "util/thread_name.h"
#include "util/unix_time.h"

namespace loadwatch {

namespace {

constexpr std::size_t kMaxOrigins = 256;

bool by_start(const Run& a, const Run& b) {
  return a.start != b.start ? a.start < b.start : a.id < b.id;
}

/// Who answers for a run's place in the history: "api", "wrk" (every summary), else its origin.
std::string writer_of(const std::string& origin) {
  if (origin == "api") return origin;
  if (origin.rfind("wrk:", 0) == 0) return "wrk";
  return origin;
}

/// About what the run's file takes (and a little more than its memory): what retention counts.
std::size_t run_bytes(const Run& run) {
  std::size_t n = 256 + run.name.size() + run.origin.size();
  for (const auto& [k, v] : run.labels) n += k.size() + v.size() + 8;
  for (const RunPhase& p : run.phases) n += 96 + p.name.size();
  for (const std::string& h : run.hosts) n += 4 + h.size();
  return n;
}

/// "locust:lc" -> "lc": an inferred run is named after its source.
std::string origin_subject(const std::string& origin) {
  auto colon = origin.find(':');
  return colon == std::string::npos ? origin : origin.substr(colon + 1);
}

}  // namespace

RunBook::RunBook(std::unique_ptr<RunStore> store, RunBookLimits limits, Clock clock,
                 Clock monotonic)
    : limits_(limits),
      clock_(clock ? std::move(clock) : Clock(unix_now)),
      monotonic_(monotonic ? std::move(monotonic) : Clock(monotonic_seconds)),
      clocks_(limits.max_unseen_gap_seconds),
      store_(std::move(store)) {
  if (!store_) return;
  RunStore::Loaded loaded = store_->load();
  for (const auto& problem : loaded.problems) spdlog::error("runs: {}", problem);
  std::unique_lock lock(mutex_);
  for (Run& run : loaded.runs) {
    if (run.open()) {
      // The daemon stopped (or was killed) while this run was open: what happened after
      // it last looked is unknown, so the run ends there and says so.
      double end = std::max(run.last_seen, run.start);
      if (!run.phases.empty()) end = std::max(end, run.phases.back().start);
      run.state = RunState::Interrupted;
      run.end = end;
      spdlog::warn("runs: run {} was open when loadwatch stopped; marked interrupted", run.id);
      save_locked(run);
    }
    add_finished_locked(std::move(run));
  }
  std::set<std::string> writers;
  for (const Run& r : finished_) writers.insert(writer_of(r.origin));
  for (const auto& w : writers) trim_locked(w, now());
  spdlog::info("runs: {} runs loaded from {}", finished_.size(), store_->directory());
  lock.unlock();
  flush_pending();
  writer_ = std::thread([this] {
    name_this_thread("lw-run-writer");
    writer_loop();
  });
}

RunBook::~RunBook() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_writer_ = true;
  }
  writer_wake_.notify_one();
  writer_.join();  // it leaves once the queue is written
}

void RunBook::writer_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    writer_wake_.wait(lock, [&] { return stop_writer_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and nothing left to write
    lock.unlock();
    flush_pending();
    lock.lock();
  }
}

// ---- state changes (mutex_ held) --------------------------------------------------------

void RunBook::save_locked(const Run& run) { pending_.push_back(Write{run.id, run}); }

bool RunBook::id_taken_locked(const std::string& id) const {
  if (current_ && current_->id == id) return true;
  return std::any_of(finished_.begin(), finished_.end(), [&](const Run& r) { return r.id == id; });
}

std::string RunBook::unique_id_locked(double start, const std::string& name) const {
  std::string base = make_run_id(start, name);
  std::string id = base;
  for (int n = 2; id_taken_locked(id); ++n) id = base + "-" + std::to_string(n);
  return id;
}

bool RunBook::make_room_locked(const std::string& writer, std::size_t bytes, double now,
                               std::string* why) {
  std::size_t count = 1, held = bytes;  // the new run
  std::set<std::string> writers;
  auto count_in = [&](const Run& r) {
    std::string w = writer_of(r.origin);
    if (w != "api") writers.insert(w);
    if (w != writer) return;
    ++count;
    held += run_bytes(r);
  };
  if (current_) count_in(*current_);
  for (const Run& r : finished_) count_in(r);
  if (writer != "api" && !writers.count(writer) && writers.size() + 1 >= limits_.max_writers) {
    *why = std::to_string(limits_.max_writers - 1) + " other writers already have runs kept";
    return false;
  }
  // Oldest first: finished_ is sorted by start. The open run is never deleted.
  for (auto it = finished_.begin();
       it != finished_.end() &&
       (count > limits_.max_finished || held > limits_.max_bytes_per_writer);) {
    bool old_enough = now - it->end.value_or(it->start) >= limits_.min_age_seconds;
    if (writer_of(it->origin) != writer || !old_enough) {
      ++it;
      continue;
    }
    --count;
    held -= std::min(held, run_bytes(*it));
    if (store_) pending_.push_back(Write{it->id, std::nullopt});
    spdlog::info("runs: run {} deleted to make room for a newer run of {}", it->id, writer);
    it = finished_.erase(it);
  }
  if (count > limits_.max_finished || held > limits_.max_bytes_per_writer) {
    *why = "the runs of " + writer + " fill its share (" + std::to_string(limits_.max_finished) +
           " runs, " + std::to_string(limits_.max_bytes_per_writer >> 20) +
           " MiB) and none ended more than " +
           std::to_string(std::lround(limits_.min_age_seconds)) + " s ago (--runs.min-age)";
    return false;
  }
  return true;
}

void RunBook::trim_locked(const std::string& writer, double now) {
  std::string why;
  // Room for "nothing more": what is beyond the share goes, if old enough.
  std::size_t count = 0, held = 0;
  for (const Run& r : finished_) {
    if (writer_of(r.origin) != writer) continue;
    ++count;
    held += run_bytes(r);
  }
  if (count > limits_.max_finished || held > limits_.max_bytes_per_writer) {
    make_room_locked(writer, 0, now, &why);
  }
}

Run* RunBook::open_locked(const std::string& origin, const std::string& name,
                          std::map<std::string, std::string> labels, double at, std::string* why,
                          const std::string& id) {
  Run run;
  run.name = name;
  run.labels = std::move(labels);
  run.origin = origin;
  run.state = RunState::Running;
  run.start = at;
  run.last_seen = at;
  // The open run of the same writer ends here and keeps its place: count it as finished.
  if (!make_room_locked(writer_of(origin), run_bytes(run), now(), why)) return nullptr;
  if (current_) close_locked(at);
  run.id = id.empty() ? unique_id_locked(at, name) : id;
  current_ = std::move(run);
  save_locked(*current_);
  spdlog::info("runs: run {} started ({})", current_->id, origin);
  return &*current_;
}

std::optional<Run> RunBook::close_locked(double at) {
  if (!current_) return std::nullopt;
  Run run = std::move(*current_);
  current_.reset();
  double end = std::max(at, run.start);
  if (!run.phases.empty()) end = std::max(end, run.phases.back().start);
  run.state = RunState::Finished;
  run.end = end;
  run.last_seen = end;
  spdlog::info("runs: run {} ended after {:.1f} s, {} phases", run.id, end - run.start,
               run.phases.size());
  save_locked(run);
  add_finished_locked(run);
  return run;
}

void RunBook::add_phase_locked(std::string name, std::optional<std::int64_t> users, double at) {
  Run& run = *current_;
  double start = std::max(at, run.start);
  if (!run.phases.empty()) start = std::max(start, run.phases.back().start);
  run.phases.push_back(RunPhase{std::move(name), start, users});
  save_locked(run);
}

void RunBook::add_finished_locked(Run run) {
  // Room was made when the run opened (make_room_locked): nothing to delete here.
  auto pos = std::upper_bound(finished_.begin(), finished_.end(), run, by_start);
  finished_.insert(pos, std::move(run));
}

void RunBook::end_stale_locked() {
  if (!current_ || current_->origin == "api") return;
  auto it = origins_.find(current_->origin);
  if (it == origins_.end()) return;
  const Origin& o = it->second;
  double unseen = awake_locked() - o.seen_awake;
  if (unseen > o.stale_after) {
    spdlog::info("runs: {} not seen for {:.0f} s; its run ends where it was last seen",
                 current_->origin, unseen);
    close_locked(o.last_seen);
  }
}

bool RunBook::inside_api_run_locked(double start, double end) const {
  // One second of slack: summaries carry whole-second timestamps.
  auto covers = [&](const Run& r) {
    if (r.origin != "api" || start < r.start - 1) return false;
    return !r.end || end <= *r.end + 1;  // an open run covers all that came after its start
  };
  if (current_ && covers(*current_)) return true;
  return std::any_of(finished_.begin(), finished_.end(), covers);
}

// ---- writes (no mutex_ held) -------------------------------------------------------------

std::vector<std::string> RunBook::flush_pending() {
  if (!store_) return {};
  // Writes leave in the order they were queued: io_mutex_ is taken before pending_ is
  // drained, so an older state of a run can never land after a newer one.
  std::lock_guard io(io_mutex_);
  std::vector<Write> writes;
  {
    std::lock_guard lock(mutex_);
    writes.swap(pending_);
  }
  std::vector<std::string> warnings;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    // Only the last state of a run in this batch matters.
    bool superseded = std::any_of(writes.begin() + static_cast<std::ptrdiff_t>(i) + 1, writes.end(),
                                  [&](const Write& later) { return later.id == w.id; });
    if (superseded) continue;
    try {
      if (w.run) {
        store_->save(*w.run);
      } else {
        store_->remove(w.id);
      }
    } catch (const std::exception& e) {
      spdlog::error("runs: {}", e.what());
      warnings.push_back(std::string("not saved: ") + e.what());
    }
  }
  return warnings;
}

// ---- API -------------------------------------------------------------------------------

RunBook::Change RunBook::start_run(const StartRunRequest& request) {
  Change change;
  {
    std::lock_guard lock(mutex_);
    double at = now();
    if (request.at) {
      check_instant(*request.at, at);
      at = *request.at;
    }
    if (!request.id.empty() && id_taken_locked(request.id)) {
      throw RunConflict("a run with the id \"" + request.id + "\" is kept already");
    }
    std::string why;
    Run* run = open_locked("api", request.name, request.labels, at, &why, request.id);
    if (!run) throw RunConflict("no room for a new run: " + why);
    if (!request.hosts.empty()) {
      run->hosts = request.hosts;
      save_locked(*run);
    }
    change.run = *run;
  }
  change.warnings = flush_pending();
  return change;
}

void RunBook::check_open_locked(const std::optional<std::string>& run_id) const {
  if (!current_) {
    if (run_id) throw RunConflict("run \"" + *run_id + "\" is not open: no run is");
    throw RunConflict("no run is open: start one first (POST /api/v1/runs)");
  }
  if (run_id && current_->id != *run_id) {
    throw RunConflict("run \"" + *run_id + "\" is not open: the open run is " + current_->id);
  }
}

RunBook::Change RunBook::add_phase(const PhaseRequest& request,
                                   const std::optional<std::string>& run_id) {
  Change change;
  {
    std::lock_guard lock(mutex_);
    check_open_locked(run_id);
    if (current_->phases.size() >= limits_.max_phases) {
      throw RunConflict("run " + current_->id + " already has " +
                        std::to_string(limits_.max_phases) + " phases, the most a run keeps");
    }
    double at = now();
    if (request.at) {
      check_instant(*request.at, at);
      at = *request.at;
    }
    add_phase_locked(request.name, request.users, at);
    change.run = *current_;
  }
  change.warnings = flush_pending();
  return change;
}

RunBook::Change RunBook::stop_run(const std::optional<std::string>& run_id,
                                  const StopRequest& request) {
  Change change;
  {
    std::lock_guard lock(mutex_);
    check_open_locked(run_id);
    double at = now();
    if (request.at) {
      check_instant(*request.at, at);
      at = *request.at;
    }
    change.run = *close_locked(at);
  }
  change.warnings = flush_pending();
  return change;
}

RunBook::Change RunBook::set_hosts(const std::string& run_id, const HostsRequest& request) {
  Change change;
  {
    std::lock_guard lock(mutex_);
    check_open_locked(run_id);
    current_->hosts = request.hosts;
    save_locked(*current_);
    change.run = *current_;
  }
  change.warnings = flush_pending();
  return change;
}

std::optional<Run> RunBook::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

std::optional<Run> RunBook::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  if (current_ && current_->id == id) return current_;
  for (const Run& r : finished_) {
    if (r.id == id) return r;
  }
  return std::nullopt;
}

std::vector<Run> RunBook::list() const {
  std::lock_guard lock(mutex_);
  std::vector<Run> out;
  out.reserve(finished_.size() + 1);
  if (current_) out.push_back(*current_);
  out.insert(out.end(), finished_.rbegin(), finished_.rend());
  return out;
}

RunBook::Page RunBook::page(const std::string& after, std::size_t limit, bool with_phases,
                            std::size_t max_phases) const {
  std::lock_guard lock(mutex_);
  Page page;
  // list()'s order without building it: the open run, then finished_ from its end.
  std::vector<const Run*> order;
  order.reserve(finished_.size() + 1);
  if (current_) order.push_back(&*current_);
  for (auto it = finished_.rbegin(); it != finished_.rend(); ++it) order.push_back(&*it);
  std::size_t i = 0;
  if (!after.empty()) {
    while (i < order.size() && order[i]->id != after) ++i;
    if (i == order.size()) {
      page.found = false;
      return page;
    }
    ++i;
  }
  std::size_t phases = 0;
  for (; i < order.size() && page.runs.size() < limit; ++i) {
    const Run& r = *order[i];
    phases += with_phases ? r.phases.size() : 0;
    if (phases > max_phases && !page.runs.empty()) break;
    if (with_phases) {
      page.runs.push_back(r);
    } else {
      Run summary;
      summary.id = r.id;
      summary.name = r.name;
      summary.labels = r.labels;
      summary.origin = r.origin;
      summary.state = r.state;
      summary.start = r.start;
      summary.end = r.end;
      summary.last_seen = r.last_seen;
      page.runs.push_back(std::move(summary));
    }
    page.phase_counts.push_back(r.phases.size());
  }
  if (i < order.size() && !page.runs.empty()) page.next = page.runs.back().id;
  return page;
}

RunBook::Exposed RunBook::exposed() const {
  std::lock_guard lock(mutex_);
  Exposed e;
  if (current_) {
    const Run& r = *current_;
    e.current = Exposed::Open{r.id, r.name, r.origin, r.start, std::nullopt};
    if (!r.phases.empty()) e.current->phase = r.phases.back();
  }
  const Run* last = nullptr;
  for (const Run& r : finished_) {
    if (!last || r.end.value_or(0) >= last->end.value_or(0)) last = &r;
  }
  if (last)
    e.last_finished = Exposed::Ended{last->id, last->start, last->end.value_or(last->start)};
  return e;
}

void RunBook::tick(double now) {
  bool queued;
  {
    std::lock_guard lock(mutex_);
    end_stale_locked();
    if (current_ && now - current_->last_seen >= limits_.heartbeat_seconds) {
      current_->last_seen = now;
      save_locked(*current_);
    }
    queued = !pending_.empty();
  }
  if (queued) write_later();  // most samples queue nothing: no wake-up
}

void RunBook::checkpoint() {
  {
    std::lock_guard lock(mutex_);
    if (current_) {
      current_->last_seen = now();
      save_locked(*current_);
    }
  }
  flush_pending();  // and whatever else is queued
}

// ---- inferred runs -----------------------------------------------------------------------

void RunBook::generator_seen(const GeneratorSighting& s) {
  {
    std::lock_guard lock(mutex_);
    if (origins_.size() >= kMaxOrigins && !origins_.count(s.origin)) {
      // Forget the generator seen longest ago, never the one whose run is open.
      auto oldest = origins_.end();
      for (auto it = origins_.begin(); it != origins_.end(); ++it) {
        if (current_ && it->first == current_->origin) continue;
        if (oldest == origins_.end() || it->second.last_seen < oldest->second.last_seen)
          oldest = it;
      }
      if (oldest != origins_.end()) origins_.erase(oldest);
    }
    Origin& o = origins_[s.origin];
    o.last_seen = std::max(o.last_seen, s.at);
    o.seen_awake = awake_locked();
    o.stale_after = s.stale_after;
    end_stale_locked();
    bool mine = current_ && current_->origin == s.origin;
    // Where a change this sighting shows happened: the middle of the span it must lie in.
    const double changed_at = s.since && *s.since < s.at ? (*s.since + s.at) / 2 : s.at;
    switch (s.activity) {
      case GeneratorActivity::Idle:
        o.ramp_started.reset();
        if (mine) close_locked(changed_at);
        break;
      case GeneratorActivity::Ramping:
      case GeneratorActivity::Steady: {
        if (!current_ && time_problem(s.at).empty()) {
          std::string why;
          mine = open_locked(s.origin, clean_name(origin_subject(s.origin), "run"), {}, changed_at,
                             &why) != nullptr;
          if (!mine) spdlog::debug("runs: {} not recorded: {}", s.origin, why);
        }
        if (!mine) break;  // an API run, or another generator's run, is open: it wins
        if (s.activity == GeneratorActivity::Ramping) {
          if (!o.ramp_started) o.ramp_started = changed_at;
          break;
        }
        if (s.users && std::isfinite(*s.users) && *s.users >= 0 &&
            *s.users <= static_cast<double>(kMaxUsers)) {
          auto users = static_cast<std::int64_t>(std::llround(*s.users));
          const auto& phases = current_->phases;
          bool changed = phases.empty() || phases.back().users != users;
          if (changed && phases.size() < limits_.max_phases) {
            // The step began when the generator started moving to it.
            add_phase_locked("users=" + std::to_string(users), users,
                             o.ramp_started.value_or(changed_at));
          }
        }
        o.ramp_started.reset();
        break;
      }
      case GeneratorActivity::Unknown:
        break;
    }
  }
  write_later();
}

void RunBook::generator_run_started(const std::string& origin, const std::string& name, double at) {
  {
    std::lock_guard lock(mutex_);
    Origin& o = origins_[origin];
    o.last_seen = std::max(o.last_seen, at);
    o.seen_awake = awake_locked();
    end_stale_locked();
    std::string why;
    if (current_ && current_->origin != origin) {
      spdlog::debug("runs: {} started a run while {} is open; ignored", origin, current_->id);
    } else if (std::string bad = time_problem(at); !bad.empty()) {
      spdlog::debug("runs: {} started a run at a time {}; ignored", origin, bad);
    } else if (!open_locked(origin, clean_name(name, origin_subject(origin)), {}, at, &why)) {
      spdlog::debug("runs: {} started a run, not recorded: {}", origin, why);
    }
  }
  write_later();
}

void RunBook::generator_run_ended(const std::string& origin, double at) {
  {
    std::lock_guard lock(mutex_);
    if (current_ && current_->origin == origin) close_locked(at);
  }
  write_later();
}

void RunBook::finished_run_seen(const std::string& origin, const std::string& name, double start,
                                double end) {
  {
    std::lock_guard lock(mutex_);
    if (!time_problem(start).empty() || !time_problem(end).empty() || end < start) return;
    // The same summary read again (every restart re-reads the textfile directory).
    for (const Run& r : finished_) {
      if (r.origin == origin && std::fabs(r.end.value_or(0) - end) < 1) return;
    }
    if (inside_api_run_locked(start, end)) return;  // part of that run, not one of its own
    // An old summary read again after its run left the history must not push out newer ones.
    std::size_t kept = 0;
    double oldest = end;
    for (const Run& r : finished_) {
      if (writer_of(r.origin) != writer_of(origin)) continue;
      ++kept;
      oldest = std::min(oldest, r.start);
    }
    if (kept >= limits_.max_finished && start < oldest) return;
    Run run;
    run.id = unique_id_locked(start, name);
    run.name = clean_name(name, origin_subject(origin));
    run.origin = origin;
    run.state = RunState::Finished;
    run.start = start;
    run.end = end;
    run.last_seen = end;
    std::string why;
    if (!make_room_locked(writer_of(origin), run_bytes(run), now(), &why)) {
      spdlog::debug("runs: finished run {} from {} not recorded: {}", run.id, origin, why);
      return;
    }
    save_locked(run);
    spdlog::info("runs: finished run {} from {}", run.id, origin);
    add_finished_locked(std::move(run));
  }
  write_later();
}

}  // namespace loadwatch
