#pragma once
// `compare` with run ids: reports fetched from a loadwatch's /api/v1/runs/{id}/report.

#include <memory>
#include <vector>

#include "analysis/report_loader.h"
#include "cli/run_client.h"

namespace loadwatch::report {

class UrlReportLoader : public analysis::ReportLoader {
 public:
  explicit UrlReportLoader(RunClientOptions options) : options_(std::move(options)) {}
  /// A run id (as make_run_id writes them), or "current".
  bool accepts(const std::string& ref) const override;
  analysis::CapacityReport load(const std::string& ref) const override;

 private:
  RunClientOptions options_;
};

/// The loaders a report reference is tried against, in order: run ids on the loadwatch at
/// `client.url` (when given), then files. For compare's BASE and CUR and report --baseline.
std::vector<std::unique_ptr<analysis::ReportLoader>> report_loaders(const RunClientOptions& client);

/// The id of the loadwatch's newest finished run with phases, else of its open one. Throws
/// analysis::ReportLoadError.
std::string newest_run_with_phases(const RunClient& client);

/// GET PATH from a loadwatch; throws analysis::ReportLoadError unless it answers 200.
std::string fetch_from_loadwatch(const RunClient& client, const std::string& path);

}  // namespace loadwatch::report
