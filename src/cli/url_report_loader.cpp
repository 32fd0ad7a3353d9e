#include "cli/url_report_loader.h"

#include <filesystem>

#include "runs/run.h"

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
