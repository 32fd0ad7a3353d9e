#include "runs/run.h"

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "runs/run_request.h"
#include "runs/run_rules.h"

namespace loadwatch {

namespace {

constexpr int kStoredFormat = 1;
constexpr std::size_t kMaxSlug = 48;

std::string slug(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (out.size() >= kMaxSlug) break;
    if (c >= 'A' && c <= 'Z') c = static_cast<unsigned char>(c - 'A' + 'a');
    bool keep =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    char put = keep ? static_cast<char>(c) : '-';
    // No runs of '-', and no leading '.' (no hidden files, no "..").
    if (put == '-' && (out.empty() || out.back() == '-')) continue;
    if (put == '.' && out.empty()) continue;
    out += put;
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  if (out.empty()) out = "run";
  return out;
}

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw std::runtime_error("field \"" + field + "\": " + why);
}

double number(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) bad(where + key, "want a number");
  double v = it->get<double>();
  if (!std::isfinite(v)) bad(where + key, "not finite");
  return v;
}

std::string text(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) bad(where + key, "want a string");
  return it->get<std::string>();
}

/// Times to the millisecond: the clock's noise below that only makes the JSON harder to read.
double ms(double t) { return std::round(t * 1000) / 1000; }

}  // namespace

const char* run_state_name(RunState state) {
  switch (state) {
    case RunState::Running:
      return "running";
    case RunState::Finished:
      return "finished";
    case RunState::Interrupted:
      return "interrupted";
  }
  return "running";
}

std::optional<double> Run::phase_end(std::size_t i) const {
  if (i + 1 < phases.size()) return phases[i + 1].start;
  return end;
}

std::string make_run_id(double start, std::string_view name) {
  std::time_t t = static_cast<std::time_t>(std::floor(start));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  return std::string(stamp) + "-" + slug(name);
}

bool plausible_run_id(std::string_view id) {
  if (id.size() < 17 || id.size() > 16 + kMaxSlug + 8) return false;
  for (std::size_t i = 0; i < 15; ++i) {
    bool digit = id[i] >= '0' && id[i] <= '9';
    if (i == 8 ? id[i] != 'T' : !digit) return false;
  }
  if (id[15] != '-') return false;
  for (std::size_t i = 16; i < id.size(); ++i) {
    char c = id[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return id[16] != '.';
}

namespace {

/// What the API's view and the list's summary share, in their order.
nlohmann::ordered_json run_header(const Run& run) {
  return {
      {"id", run.id},
      {"name", run.name},
      {"labels", run.labels},
      {"origin", run.origin},
      {"state", run_state_name(run.state)},
      {"start", ms(run.start)},
      {"end", run.end ? nlohmann::ordered_json(ms(*run.end)) : nlohmann::ordered_json(nullptr)}};
}

}  // namespace

nlohmann::ordered_json run_to_json(const Run& run) {
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < run.phases.size(); ++i) {
    const RunPhase& p = run.phases[i];
    auto end = run.phase_end(i);
    phases.push_back(
        {{"name", p.name},
         {"start", ms(p.start)},
         {"end", end ? nlohmann::ordered_json(ms(*end)) : nlohmann::ordered_json(nullptr)},
         {"users", p.users ? nlohmann::ordered_json(*p.users) : nlohmann::ordered_json(nullptr)}});
  }
  nlohmann::ordered_json j = run_header(run);
  if (!run.hosts.empty()) j["hosts"] = run.hosts;
  j["phases"] = std::move(phases);
  return j;
}

void append_run_json(std::string& out, const Run& run) {
  auto put = [&out](const nlohmann::ordered_json& value) {
    out += value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  };
  std::string header;
  {
    nlohmann::ordered_json h = run_header(run);
    if (!run.hosts.empty()) h["hosts"] = run.hosts;
    h["phases"] = nlohmann::ordered_json::array();
    header = h.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  out.append(header, 0, header.size() - 2);  // up to "phases":[
  for (std::size_t i = 0; i < run.phases.size(); ++i) {
    const RunPhase& p = run.phases[i];
    auto end = run.phase_end(i);
    out += i ? ",{\"name\":" : "{\"name\":";
    put(p.name);
    out += ",\"start\":";
    put(ms(p.start));
    out += ",\"end\":";
    put(end ? nlohmann::ordered_json(ms(*end)) : nlohmann::ordered_json(nullptr));
    out += ",\"users\":";
    put(p.users ? nlohmann::ordered_json(*p.users) : nlohmann::ordered_json(nullptr));
    out += '}';
  }
  out += "]}";
}

nlohmann::ordered_json run_summary_json(const Run& run, std::size_t phase_count) {
  nlohmann::ordered_json j = run_header(run);
  j["phase_count"] = phase_count;
  return j;
}

nlohmann::ordered_json run_to_stored_json(const Run& run) {
  return {{"format", kStoredFormat}, {"run", run_to_json(run)}, {"last_seen", ms(run.last_seen)}};
}

Run run_from_stored_json(const nlohmann::json& stored) {
  if (!stored.is_object()) bad("", "the file is not a JSON object");
  auto format = stored.find("format");
  if (format == stored.end() || !format->is_number_integer() || *format != kStoredFormat) {
    bad("format", "want " + std::to_string(kStoredFormat));
  }
  auto it = stored.find("run");
  if (it == stored.end() || !it->is_object()) bad("run", "want an object");
  const nlohmann::json& j = *it;
  Run run;
  run.id = text(j, "id", "run.");
  if (!plausible_run_id(run.id)) bad("run.id", "not a run id");
  run.name = text(j, "name", "run.");
  run.origin = text(j, "origin", "run.");
  std::string state = text(j, "state", "run.");
  if (state == "running") {
    run.state = RunState::Running;
  } else if (state == "finished") {
    run.state = RunState::Finished;
  } else if (state == "interrupted") {
    run.state = RunState::Interrupted;
  } else {
    bad("run.state", "want running, finished or interrupted");
  }
  run.start = number(j, "start", "run.");
  auto end = j.find("end");
  if (end != j.end() && !end->is_null()) run.end = number(j, "end", "run.");
  if (run.state != RunState::Running && !run.end) bad("run.end", "a " + state + " run needs one");
  auto labels = j.find("labels");
  if (labels != j.end()) {
    if (!labels->is_object()) bad("run.labels", "want an object");
    for (const auto& [k, v] : labels->items()) {
      if (!v.is_string()) bad("run.labels." + k, "want a string");
      run.labels[k] = v.get<std::string>();
    }
  }
  auto hosts = j.find("hosts");
  if (hosts != j.end()) {
    if (!hosts->is_array() || hosts->size() > kMaxRunHosts) {
      bad("run.hosts", "want an array of at most " + std::to_string(kMaxRunHosts) + " names");
    }
    for (const auto& h : *hosts) {
      if (!h.is_string()) bad("run.hosts", "want strings");
      run.hosts.push_back(h.get<std::string>());
    }
  }
  auto phases = j.find("phases");
  if (phases == j.end() || !phases->is_array()) bad("run.phases", "want an array");
  if (phases->size() > kMaxRunPhases) {
    bad("run.phases", "more than " + std::to_string(kMaxRunPhases) + " phases");
  }
  for (std::size_t i = 0; i < phases->size(); ++i) {
    const nlohmann::json& p = (*phases)[i];
    std::string where = "run.phases[" + std::to_string(i) + "].";
    if (!p.is_object()) bad(where.substr(0, where.size() - 1), "want an object");
    RunPhase phase;
    phase.name = text(p, "name", where);
    phase.start = number(p, "start", where);
    auto users = p.find("users");
    if (users != p.end() && !users->is_null()) {
      if (!users->is_number_integer()) bad(where + "users", "want an integer");
      phase.users = users->get<std::int64_t>();
    }
    run.phases.push_back(std::move(phase));
  }
  run.last_seen = stored.contains("last_seen") ? number(stored, "last_seen", "") : run.start;
  // The same rules as a run from the API: a file is no more trusted than a client.
  if (std::string why = run_problem(run); !why.empty()) throw std::runtime_error(why);
  return run;
}

}  // namespace loadwatch
