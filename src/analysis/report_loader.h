#pragma once
// Where `compare` and `report` find the reports they are given. This layer reads saved files
// (FileReportLoader); run ids on a daemon (--url) are read by cli/url_report_loader.h, through
// the same interface, because reaching a daemon needs libcurl, which this layer does not use.

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/capacity_csv.h"
#include "analysis/capacity_report.h"

namespace loadwatch::analysis {

/// A report that cannot be had; the message names the reference and the reason.
struct ReportLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class ReportLoader {
 public:
  virtual ~ReportLoader() = default;
  /// Whether `ref` is this loader's kind of reference (a path, a run id, ...).
  virtual bool accepts(const std::string& ref) const = 0;
  /// Throws ReportLoadError.
  virtual CapacityReport load(const std::string& ref) const = 0;
};

/// A saved report (JSON, as `--format json` writes it) or a capacity CSV, by path; "-" is stdin.
class FileReportLoader : public ReportLoader {
 public:
  explicit FileReportLoader(CsvOptions csv = {}, AnalysisOptions analysis = {})
      : csv_(std::move(csv)), analysis_(analysis) {}
  bool accepts(const std::string& ref) const override;
  CapacityReport load(const std::string& ref) const override;

 private:
  CsvOptions csv_;
  AnalysisOptions analysis_;
};

/// The first loader that accepts `ref` loads it.
CapacityReport load_report(const std::string& ref,
                           const std::vector<std::unique_ptr<ReportLoader>>& loaders);

/// A whole file or stdin ("-"), at most `max_bytes`. Throws ReportLoadError.
std::string read_input(const std::string& path, std::size_t max_bytes = 64 << 20);

/// Phases from CSV text, analysed. Throws CsvError.
CapacityReport report_from_csv(std::string_view text, const std::string& input_label,
                               const CsvOptions& csv = {}, const AnalysisOptions& analysis = {});

/// A report from JSON text. Throws ReportLoadError naming the field.
CapacityReport report_from_json(std::string_view text);

}  // namespace loadwatch::analysis
