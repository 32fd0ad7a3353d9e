#include "cli/url_report_loader.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "runs/run.h"
#include "util/bounded_json.h"

namespace loadwatch::report {

std::string fetch_from_loadwatch(const RunClient& client, const std::string& path) {
  RunAnswer a = client.get(path);
  if (!a.reached) throw analysis::ReportLoadError(client.url() + path + ": " + a.error);
  if (a.status != 200) {
    throw analysis::ReportLoadError(client.url() + path + ": HTTP " + std::to_string(a.status) +
                                    ": " + a.body);
  }
  return a.body;
}

std::string newest_run_with_phases(const RunClient& client) {
  nlohmann::json doc;
  try {
    doc = parse_bounded_json(fetch_from_loadwatch(client, "/api/v1/runs"));
  } catch (const JsonInputError& e) {
    throw analysis::ReportLoadError(std::string("/api/v1/runs: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("data") || !doc["data"].is_array()) {
    throw analysis::ReportLoadError("/api/v1/runs: not the run list");
  }
  std::string open;
  try {
    for (const auto& r : doc["data"]) {
      // The list gives summaries: phase_count, not the phases.
      if (!r.is_object() || json_number_or(r, "phase_count", 0) < 1) continue;
      if (json_string_or(r, "state") == "running") {
        if (open.empty()) open = json_string_or(r, "id");
        continue;
      }
      return json_string_or(r, "id");
    }
  } catch (const JsonInputError& e) {
    throw analysis::ReportLoadError(std::string("/api/v1/runs: a run: ") + e.what());
  }
  if (open.empty()) throw analysis::ReportLoadError("the loadwatch has no run with phases");
  return open;
}

std::vector<std::unique_ptr<analysis::ReportLoader>> report_loaders(
    const RunClientOptions& client) {
  std::vector<std::unique_ptr<analysis::ReportLoader>> loaders;
  if (!client.url.empty()) loaders.push_back(std::make_unique<UrlReportLoader>(client));
  loaders.push_back(std::make_unique<analysis::FileReportLoader>());
  return loaders;
}

bool UrlReportLoader::accepts(const std::string& ref) const {
  std::error_code ec;
  if (std::filesystem::exists(ref, ec)) return false;  // a saved report of that name wins
  return ref == "current" || plausible_run_id(ref);
}

analysis::CapacityReport UrlReportLoader::load(const std::string& ref) const {
  try {
    RunClient client(options_);
    return analysis::report_from_json(
        fetch_from_loadwatch(client, "/api/v1/runs/" + ref + "/report?format=json"));
  } catch (const analysis::ReportLoadError&) {
    throw;
  } catch (const std::exception& e) {
    throw analysis::ReportLoadError(ref + ": " + e.what());
  }
}

}  // namespace loadwatch::report
