// libFuzzer harness: the run API's bodies (src/runs/run_request.cpp) and stored run files as
// the start-up loader reads them (src/runs/run_store.cpp, run.cpp, run_rules.cpp). Any input
// either fails with the documented exception or yields a run that obeys the one validator
// (run_problem) and survives the stored form.
// clang-format off
// FUZZ_SOURCES: src/runs/run_request.cpp src/runs/run.cpp src/runs/run_rules.cpp src/runs/run_store.cpp src/util/bounded_file.cpp src/util/atomic_file.cpp src/util/heap_trim.cpp src/metrics/exposition.cpp
// FUZZ_LIBS:
// clang-format on
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "metrics/exposition.h"
#include "runs/run.h"
#include "runs/run_request.h"
#include "runs/run_rules.h"
#include "runs/run_store.h"

using namespace loadwatch;

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_run_round_trip(const std::string& name, const std::map<std::string, std::string>& labels,
                          double start) {
  Run run;
  run.id = make_run_id(start, name);
  require(plausible_run_id(run.id));
  run.name = name;
  run.labels = labels;
  run.origin = "api";
  run.start = start;
  run.last_seen = start;
  run.phases.push_back(RunPhase{name, start, 7});
  Run back = run_from_stored_json(nlohmann::json::parse(run_to_stored_json(run).dump()));
  require(back.id == run.id && back.name == name && back.labels == labels);
  require(back.phases.size() == 1 && back.phases[0].name == name && back.phases[0].users == 7);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  double start = 1796144712.0 + static_cast<double>(size);
  try {
    StartRunRequest req = parse_start_request(text);
    require(name_problem(req.name).empty());
    require(text_problem(req.name).empty());
    require(req.labels.size() <= kMaxLabels);
    for (const auto& [k, v] : req.labels) {
      require(!k.empty() && k.size() <= kMaxRunLabelNameBytes && text_problem(v).empty());
      require(v.size() <= kMaxRunLabelValueBytes);
    }
    require(req.id.empty() || plausible_run_id(req.id));
    require(!req.at || (std::isfinite(*req.at) && *req.at >= 0));
    require(req.hosts.size() <= kMaxRunHosts && hosts_problem(req.hosts).empty());
    check_run_round_trip(req.name, req.labels, start);
  } catch (const RunRequestError& e) {
    require(!e.field().empty());
  }
  try {
    PhaseRequest req = parse_phase_request(text);
    require(name_problem(req.name).empty());
    require(!req.users || (*req.users >= 0 && *req.users <= kMaxUsers));
    require(!req.at || (std::isfinite(*req.at) && *req.at >= 0));
  } catch (const RunRequestError& e) {
    require(!e.field().empty());
  }
  try {
    HostsRequest req = parse_hosts_request(text);
    require(hosts_problem(req.hosts).empty());
  } catch (const RunRequestError& e) {
    require(!e.field().empty());
  }
  try {
    StopRequest req = parse_stop_request(text);
    require(!req.at || (std::isfinite(*req.at) && *req.at >= 0));
  } catch (const RunRequestError&) {
  }
  // Names a generator sends are cleaned, never refused.
  std::string cleaned = clean_name(text, "fallback");
  require(name_problem(cleaned).empty());
  require(plausible_run_id(make_run_id(start, text)));
  // A run file as the loader reads it: refused with a message, or a run the validator passes
  // that reads back the same.
  try {
    Run run = parse_run_file(text);
    require(run_problem(run).empty());
    require(run.phases.size() <= kMaxRunPhases);
    require(run.open() || run.end.has_value());
    Run back = parse_run_file(run_to_stored_json(run).dump());
    require(back.id == run.id && back.name == run.name && back.phases.size() == run.phases.size());
    require(back.hosts == run.hosts);
  } catch (const std::runtime_error& e) {
    require(e.what()[0] != '\0');
  }
  return 0;
}
