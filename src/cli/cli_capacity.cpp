// loadwatch capacity FILE.csv: the knee, the USL fit and the table from a CSV of step results.
#include <iostream>
#include <sstream>

#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "report/render_html.h"

namespace loadwatch::analysis {

int run_capacity(int argc, char** argv) {
  CommandLine app{
      "Capacity report (throughput knee, latency knee, USL fit) from a CSV of step results:\n"
      "one line per step with concurrency, throughput[, latency, errors], with or without a\n"
      "header. A headerless line is: users rps latency_ms success_pct. FILE - reads stdin.",
      "loadwatch capacity"};
  std::string file, format_name = "table", columns;
  AnalysisOptions analysis;
  app.option("FILE", file, "CSV file, or - for stdin").required();
  app.option("--format", format_name, "table, markdown, json or html (one self-contained file)")
      .capture_default();
  app.option("--columns", columns,
             "Column names for a file without a header, comma-separated "
             "(e.g. users,rps,p95_ms,error_pct)");
  app.option("--sensitivity", analysis.kneedle.sensitivity, "Kneedle sensitivity S")
      .capture_default()
      .range(0.0, 100.0);
  app.flag("--online", analysis.kneedle.online,
           "Kneedle's online variant: the last knee instead of the first");
  if (auto code = parse_cli(app, argc, argv)) return *code;

  bool html = format_name == "html";
  std::optional<Format> format = html ? Format::json : parse_format(format_name);
  if (!format) return usage_error("--format: expected table, markdown, json or html");
  CsvOptions csv;
  if (!columns.empty()) {
    std::stringstream in(columns);
    for (std::string name; std::getline(in, name, ',');) csv.columns.push_back(name);
  }
  try {
    std::string text = read_input(file);
    CapacityReport report = report_from_csv(text, "csv:" + file, csv, analysis);
    // A CSV has no time series: the page draws the scaling chart and the tables.
    std::cout << (html ? report::render_report_html(report, render_report_json(report), "{}")
                       : render_report(report, *format));
    if (*format != Format::json) std::cout << std::flush;
    return 0;
  } catch (const ReportLoadError& e) {
    return usage_error(e.what());
  } catch (const CsvError& e) {
    return usage_error(file + ": " + e.what());
  }
}

}  // namespace loadwatch::analysis
