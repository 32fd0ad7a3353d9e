#include "cli/fleet_report_cli.h"

#include <nlohmann/json.hpp>

#include "analysis/fleet_report.h"
#include "analysis/render.h"
#include "analysis/report_loader.h"
#include "cli/daemon_clock.h"
#include "cli/history_latency.h"
#include "cli/url_report_loader.h"
#include "cli/usage_error.h"
#include "report/prometheus_fleet.h"
#include "report/render_fleet_html.h"
#include "report/run_report.h"

namespace loadwatch::report {

namespace {

int render(std::vector<analysis::FleetHost> hosts, const std::string& format, std::string& out) {
  analysis::FleetReport report = analysis::build_fleet_report(std::move(hosts));
  auto f = analysis::parse_format(format);
  if (!f) {
    out = render_fleet_html(report);
  } else if (f == analysis::Format::json) {
    nlohmann::ordered_json j;
    to_json(j, report);
    out = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else if (f == analysis::Format::markdown) {
    out = analysis::render_markdown(analysis::fleet_document(report));
  } else {
    out = analysis::render_text(analysis::fleet_document(report));
  }
  return 0;
}

/// table, markdown, json or html; else the usage error, false.
bool fleet_format(const std::string& format) {
  if (format == "html" || analysis::parse_format(format)) return true;
  analysis::usage_error("--format: a report across hosts is table, markdown, json or html");
  return false;
}

}  // namespace

int prometheus_fleet_report(const PrometheusSourceOptions& prometheus,
                            const std::vector<std::string>& instances, const Run& run, double now,
                            const RunSeriesOptions& options, const std::string& format,
                            std::string& out) {
  if (!fleet_format(format)) return analysis::kExitBadInput;
  std::vector<analysis::FleetHost> hosts;
  try {
    hosts = prometheus_fleet_hosts(prometheus, instances, run, now, options);
  } catch (const std::exception& e) {
    return analysis::usage_error(e.what());
  }
  return render(std::move(hosts), format, out);
}

int fleet_report(const std::vector<Daemon>& daemons, std::string run_ref, const std::string& format,
                 std::string& out) {
  if (!fleet_format(format)) return analysis::kExitBadInput;
  std::vector<analysis::FleetHost> hosts;
  std::vector<RunClient> clients;  // kept: the histograms are read after every report
  try {
    for (const Daemon& d : daemons) {
      clients.emplace_back(d.options);
      const RunClient& client = clients.back();
      analysis::FleetHost h;
      h.name = d.name;
      h.url = d.options.url;
      std::string why;
      if (auto skew = measure_skew(client, &why)) {
        h.skew_seconds = skew->seconds;
        h.skew_uncertainty = skew->uncertainty;
      } else {
        h.skew_unavailable = why;
      }
      if (run_ref.empty()) run_ref = newest_run_with_phases(client);
      std::string path = "/api/v1/runs/" + run_ref + "/report?format=json";
      RunAnswer a = client.get(path);
      if (a.reached && a.status == 404) {
        throw analysis::ReportLoadError(
            d.name + " has no run " + run_ref +
            ": open the run on every host (loadwatch run start --url A --url B ...)");
      }
      if (!a.reached || a.status != 200) {
        throw analysis::ReportLoadError(d.name + ": " +
                                        (a.reached ? "HTTP " + std::to_string(a.status) : a.error));
      }
      try {
        h.report = analysis::report_from_json(a.body);
      } catch (const std::exception& e) {
        throw analysis::ReportLoadError(d.name + ": the report: " + e.what());
      }
      hosts.push_back(std::move(h));
    }
  } catch (const std::exception& e) {
    return analysis::usage_error(e.what());
  }
  // The generators' buckets from each history: the fleet's latency without averaging.
  std::vector<const RunClient*> readers;
  for (const RunClient& c : clients) readers.push_back(&c);
  read_history_histograms(hosts, readers);
  return render(std::move(hosts), format, out);
}

}  // namespace loadwatch::report
