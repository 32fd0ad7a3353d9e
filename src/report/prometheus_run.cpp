#include "report/prometheus_run.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

namespace loadwatch::report {

namespace {

/// `id` is `ref`, or "YYYYMMDDTHHMMSS-" + `ref` (+ "-N" when two runs shared a second): the
/// whole name, so "load" does not pick a run named "step-load".
bool names(const std::string& id, const std::string& ref) {
  if (id == ref) return true;
  constexpr std::size_t kStamp = 16;  // "20261201T170512-"
  if (id.size() <= kStamp || id[8] != 'T' || id[kStamp - 1] != '-') return false;
  std::string_view rest(id);
  rest.remove_prefix(kStamp);
  if (rest == ref) return true;
  if (!rest.starts_with(ref) || rest.size() < ref.size() + 2 || rest[ref.size()] != '-')
    return false;
  std::string_view n = rest.substr(ref.size() + 1);
  return std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string label(const LabeledSeries& s, const std::string& key) {
  auto it = s.labels.find(key);
  return it == s.labels.end() ? std::string() : it->second;
}

}  // namespace

// The run's own series (start, phases, users, end) are read with fetch_last: a phase of a few
// seconds lives in Prometheus for a few scrapes, and a query_range over the lookback (a step of
// 8 s for 24 h) would pass over it.
Run find_prometheus_run(SeriesSource& source, const std::string& ref, double now, double lookback,
                        std::string* instance, std::vector<std::string>* all_instances) {
  double from = now - lookback;
  // The names runs were given, by id: a run is also found by its name as typed.
  std::map<std::string, std::string> name_of;
  for (const auto& s : source.fetch_last("loadwatch_run_info", {}, from, now)) {
    name_of[label(s, "run")] = label(s, "name");
  }
  Run run;
  double newest = -1;
  for (const auto& s : source.fetch_last("loadwatch_run_start_timestamp_seconds", {}, from, now)) {
    std::string id = label(s, "run");
    if (id.empty() || s.series.empty()) continue;
    if (!names(id, ref) && name_of[id] != ref) continue;
    if (s.series.v.back() > newest) {
      newest = s.series.v.back();
      run.id = id;
      run.start = newest;
    }
  }
  if (run.id.empty()) {
    throw SeriesSourceError("no run \"" + ref + "\" in loadwatch_run_start_timestamp_seconds");
  }
  std::set<std::string> instances;
  for (const auto& s :
       source.fetch_last("loadwatch_run_start_timestamp_seconds", {{"run", run.id}}, from, now)) {
    instances.insert(label(s, "instance"));
  }
  if (instances.size() > 1 && all_instances) {
    all_instances->assign(instances.begin(), instances.end());
    run.name = name_of[run.id].empty() ? ref : name_of[run.id];
    return run;
  }
  if (instances.size() > 1) {
    std::string list;
    for (const auto& i : instances) list += (list.empty() ? "" : ", ") + i;
    throw SeriesSourceError("run " + run.id + " was exported by several instances (" + list +
                            "): choose one with --instance");
  }
  if (instance && !instances.empty() && !instances.begin()->empty()) *instance = *instances.begin();
  run.name = name_of[run.id].empty() ? ref : name_of[run.id];
  auto by_instance = runs_by_instance(source, run, now);
  if (!by_instance.empty()) run = std::move(by_instance.begin()->second);
  return run;
}

// One query per family for every instance: a fleet of many hosts costs what one host does.
std::map<std::string, Run> runs_by_instance(SeriesSource& source, const Run& found, double now) {
  std::map<std::string, Run> out;
  auto run_of = [&](const LabeledSeries& s) -> Run& {
    auto [it, fresh] = out.try_emplace(label(s, "instance"), found);
    if (fresh) it->second.phases.clear();
    return it->second;
  };
  std::map<std::string, std::string> match{{"run", found.id}};
  for (const auto& s :
       source.fetch_last("loadwatch_run_start_timestamp_seconds", match, found.start, now)) {
    if (!s.series.empty()) run_of(s).start = s.series.v.back();
  }
  for (const auto& s :
       source.fetch_last("loadwatch_run_phase_start_timestamp_seconds", match, found.start, now)) {
    if (!s.labels.count("phase") || s.series.empty()) continue;
    run_of(s).phases.push_back({label(s, "phase"), s.series.v.back(), std::nullopt});
  }
  for (const auto& s : source.fetch_last("loadwatch_run_phase_users", match, found.start, now)) {
    if (!s.labels.count("phase") || s.series.empty()) continue;
    for (auto& p : run_of(s).phases) {
      if (p.name == label(s, "phase")) p.users = std::llround(s.series.v.back());
    }
  }
  // The end: as the daemon exported it once the run finished, else the last sample of the run.
  std::map<std::string, double> end;
  for (const auto& s :
       source.fetch_last("loadwatch_run_end_timestamp_seconds", match, found.start, now)) {
    if (!s.series.empty()) end[label(s, "instance")] = s.series.v.back();
  }
  bool all_ended =
      std::all_of(out.begin(), out.end(), [&](const auto& kv) { return end.count(kv.first) != 0; });
  if (!all_ended) {
    for (const auto& s : source.fetch("loadwatch_run_info", match, found.start, now)) {
      std::string i = label(s, "instance");
      if (s.series.empty() || end.count(i) || !out.count(i)) continue;
      end[i] = std::max(end[i], s.series.t.back());
    }
  }
  for (auto& [instance, run] : out) {
    std::sort(run.phases.begin(), run.phases.end(),
              [](const RunPhase& a, const RunPhase& b) { return a.start < b.start; });
    auto e = end.find(instance);
    run.end = e == end.end() ? now : e->second;
    run.state = RunState::Finished;
  }
  return out;
}

}  // namespace loadwatch::report
