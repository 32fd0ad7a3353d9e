#include "cli/cli_report.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analysis/compare.h"
#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "cli/cli_common.h"
#include "cli/client_flags.h"
#include "cli/fleet_report_cli.h"
#include "cli/url_report_loader.h"
#include "report/label_matchers.h"
#include "report/prometheus_run.h"
#include "report/prometheus_series_source.h"
#include "report/render_html.h"
#include "report/run_report.h"
#include "report/timeline.h"
#include "util/bounded_json.h"
#include "util/unix_time.h"

namespace loadwatch::report {

namespace {

using analysis::usage_error;

/// A timeline from a file or a server, checked and written back compact (it goes into the
/// HTML page as it is); empty stays empty.
std::string checked_timeline(const std::string& text) {
  if (text.empty()) return text;
  nlohmann::json t;
  try {
    t = parse_bounded_json(text);
  } catch (const JsonInputError& e) {
    throw analysis::ReportLoadError(std::string("the timeline: ") + e.what());
  }
  if (!t.is_object()) throw analysis::ReportLoadError("the timeline: not a JSON object");
  return t.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Writes `out` to stdout or the --output file; 0, or 2 when it cannot be written.
int write_output(const std::string& out, const std::string& output) {
  if (output.empty()) {
    std::cout << out << std::flush;
    return 0;
  }
  std::ofstream f(output, std::ios::trunc);
  f << out;
  f.close();
  return f ? 0 : usage_error(output + ": cannot write");
}

}  // namespace

int run_report_cli(int argc, char** argv) {
  CommandLine app{
      "A run's capacity report: per phase, the knee, the USL fit and what saturated first.\n"
      "From a loadwatch (--url, the run's id or its newest run), from a Prometheus server\n"
      "that scraped it (--prometheus, with the run's id or name), or a saved report (--file).\n"
      "With --baseline (a saved report file, or a run id with --url), the comparison follows\n"
      "and the exit code is compare's: 1 on a regression. Exit 2 on bad input or an\n"
      "unreachable server.",
      "loadwatch report"};
  ClientFlags flags;
  std::string file, prometheus, run_ref, instance, format_name = "table", baseline, output,
                                                   generator_target, match;
  double lookback_hours = 24;
  add_client_flags(app, flags,
                   "loadwatch URL, e.g. http://127.0.0.1:9797 (several: one report across "
                   "their hosts)");
  app.option("--file", file,
             "A saved report (JSON: a storage directory's reports/ID.json, or capacity "
             "--format json); its ID.timeline.json beside it is charted too");
  app.option("--prometheus", prometheus, "Prometheus server URL, e.g. http://prom:9090");
  app.option("--run", run_ref, "Run id (or, with --prometheus, its name)");
  app.option("--instance", instance,
             "With --prometheus: the loadwatch's instance label (default: the one that "
             "exported the run)");
  app.option("--match", match,
             "With --prometheus: label matchers that narrow every query, e.g. "
             "'{job=\"loadwatch\",env=\"perf\"}'");
  app.option("--lookback-hours", lookback_hours, "With --prometheus: how far back to look")
      .capture_default();
  app.option("--generator-target", generator_target,
             "With --prometheus: the target that is the load generator");
  app.option("--format", format_name, "table, markdown, json or html").capture_default();
  app.option("--baseline", baseline, "Compare with this report file or run id");
  std::vector<std::string> max_specs, min_specs;
  app.option("--max", max_specs,
             "With --baseline: upper limit, as compare's (repeatable; default p95=+20%)")
      .one_value_each();
  app.option("--min", min_specs, "With --baseline: lower limit, as compare's (repeatable)")
      .one_value_each();
  app.option("--output,-o", output, "Write here instead of stdout");
  if (auto code = analysis::parse_cli(app, argc, argv)) return *code;

  bool html = format_name == "html";
  std::optional<analysis::Format> format = analysis::parse_format(format_name);
  if (!html && !format) return usage_error("--format: expected table, markdown, json or html");
  std::vector<Daemon> daemons;
  try {
    daemons = resolve_daemons(flags);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  }
  RunClientOptions client;
  if (!daemons.empty()) client = daemons[0].options;
  if (!daemons.empty() + !prometheus.empty() + !file.empty() != 1) {
    return usage_error("give one of --url, --prometheus or --file");
  }
  if (!prometheus.empty() && run_ref.empty()) return usage_error("--prometheus needs --run");
  if (!match.empty() && prometheus.empty()) return usage_error("--match: with --prometheus");
  PrometheusSourceOptions prom;
  prom.url = prometheus;
  try {
    prom.matchers = parse_label_matchers(match);
  } catch (const LabelMatcherError& e) {
    return usage_error(e.what());
  }
  if (daemons.size() > 1) {
    if (!baseline.empty()) return usage_error("--baseline: with one --url");
    std::string out;
    if (int rc = fleet_report(daemons, run_ref, format_name, out)) return rc;
    return write_output(out, output);
  }

  std::string report_json, timeline;
  std::optional<analysis::CapacityReport> fresh;  // built here: never read back from its JSON
  std::string label;
  try {
    if (!file.empty()) {
      report_json = analysis::read_input(file);
      std::string tl = file.size() > 5 && file.ends_with(".json")
                           ? file.substr(0, file.size() - 5) + ".timeline.json"
                           : std::string();
      std::error_code ec;
      if (!tl.empty() && std::filesystem::exists(tl, ec)) timeline = analysis::read_input(tl);
      run_ref = file;
    } else if (!client.url.empty()) {
      RunClient c(client);
      if (run_ref.empty()) run_ref = newest_run_with_phases(c);
      std::string base = "/api/v1/runs/" + run_ref + "/report";
      report_json = fetch_from_loadwatch(c, base + "?format=json");
      if (html) timeline = fetch_from_loadwatch(c, base + "?format=timeline");
    } else {
      double now = unix_now();
      // The run's instance narrows every query, so a fleet's other hosts are not added in.
      // Without --instance, a run several instances exported is one run across their hosts.
      std::vector<std::string> fleet;
      Run run = [&] {
        PrometheusSourceOptions o = prom;
        o.instance = instance;
        PrometheusSeriesSource runs(o);
        return find_prometheus_run(runs, run_ref, now, lookback_hours * 3600, &instance,
                                   instance.empty() ? &fleet : nullptr);
      }();
      RunSeriesOptions options;
      if (!generator_target.empty()) options.generator_target = generator_target;
      if (!fleet.empty()) {
        if (!baseline.empty()) return usage_error("--baseline: with one instance (--instance)");
        std::string out;
        if (int rc = prometheus_fleet_report(prom, fleet, run, now, options, format_name, out)) {
          return rc;
        }
        return write_output(out, output);
      }
      prom.instance = instance;
      PrometheusSeriesSource source(prom);
      analysis::RunSeries series;
      fresh = report_for_run(run, source, now, options, &series);
      report_json = analysis::render_report_json(*fresh);
      timeline = timeline_json(series).dump();
    }
    if (html) timeline = checked_timeline(timeline);
    label = run_ref;
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }

  analysis::CapacityReport report;
  if (fresh) {
    report = std::move(*fresh);
  } else {
    try {
      report = analysis::report_from_json(report_json);
    } catch (const std::exception& e) {
      return usage_error(std::string("the report: ") + e.what());
    }
  }
  std::optional<analysis::Comparison> comparison;
  if (!baseline.empty()) {
    try {
      comparison =
          analysis::compare_reports(analysis::load_report(baseline, report_loaders(client)), report,
                                    analysis::rules_or_default(max_specs, min_specs));
    } catch (const std::exception& e) {
      return usage_error("--baseline: " + std::string(e.what()));
    }
  }

  std::string out;
  if (html) {
    std::optional<HtmlComparison> cmp;
    if (comparison) {
      cmp = HtmlComparison{analysis::comparison_document(*comparison, baseline, label),
                           comparison->regressed(), baseline};
    }
    out = render_report_html(report, report_json, timeline, cmp);
  } else {
    out =
        *format == analysis::Format::json ? report_json : analysis::render_report(report, *format);
    if (comparison && *format != analysis::Format::json) {
      out += "\n" + analysis::render_comparison(*comparison, *format, baseline, label);
    }
  }
  if (int rc = write_output(out, output)) return rc;
  return comparison ? comparison->exit_code() : 0;
}

}  // namespace loadwatch::report
