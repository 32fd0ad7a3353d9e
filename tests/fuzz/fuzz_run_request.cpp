// libFuzzer harness: the run API's bodies (src/runs/run_request.cpp) and stored run files
// (src/runs/run.cpp). Any input either fails with the documented exception or yields a run
// whose name, labels and id obey the documented rules and survive the stored form.
// FUZZ_SOURCES: src/runs/run_request.cpp src/runs/run.cpp src/metrics/exposition.cpp
// FUZZ_LIBS:
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "runs/run.h"
#include "metrics/exposition.h"
#include "runs/run_request.h"

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
    require(req.labels.size() <= kMaxLabels);
    for (const auto& [k, v] : req.labels) {
      require(!k.empty() && k.size() <= kMaxRunLabelNameBytes && valid_utf8(v));
      require(v.size() <= kMaxRunLabelValueBytes);
    }
    check_run_round_trip(req.name, req.labels, start);
  } catch (const RunRequestError& e) {
    require(!e.field().empty());
  }
  try {
    PhaseRequest req = parse_phase_request(text);
    require(name_problem(req.name).empty());
    require(!req.users || (*req.users >= 0 && *req.users <= kMaxUsers));
  } catch (const RunRequestError& e) {
    require(!e.field().empty());
  }
  try {
    parse_empty_request(text);
  } catch (const RunRequestError&) {
  }
  // Names a generator sends are cleaned, never refused.
  std::string cleaned = clean_name(text, "fallback");
  require(name_problem(cleaned).empty());
  require(plausible_run_id(make_run_id(start, text)));
  // A stored run file: refused with a message, or a run.
  try {
    Run run = run_from_stored_json(nlohmann::json::parse(text));
    require(plausible_run_id(run.id));
    require(run.open() || run.end.has_value());
  } catch (const std::exception&) {
  }
  return 0;
}
