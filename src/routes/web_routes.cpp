#include "routes/web_routes.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <utility>

#include "routes/live_routes.h"
#include "util/gzip.h"
#include "util/html_escape.h"
#include "util/unix_time.h"
#include "version.h"

namespace loadwatch {

namespace {

std::string pid_list(const std::vector<pid_t>& pids, size_t max) {
  std::string out;
  for (size_t i = 0; i < pids.size() && i < max; ++i) {
    if (i) out += ", ";
    out += std::to_string(pids[i]);
  }
  if (pids.size() > max) out += ", … (" + std::to_string(pids.size()) + " in all)";
  return out;
}

/// "2026-12-01T17:14:04Z" (UTC), "never" for 0.
std::string utc_time(double unix_seconds) {
  if (unix_seconds <= 0) return "never";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string source_rows(const std::vector<SourceState>& sources) {
  std::string rows;
  for (const auto& s : sources) {
    const char* state = s.up ? "up\">up" : s.scrapes == 0 ? "down\">pending" : "down\">down";
    std::string error = "none";
    if (!s.last_error_reason.empty()) {
      error = "<code>" + html_escape(s.last_error_reason) + "</code> " + html_escape(s.last_error);
    }
    rows += "<tr><td>" + html_escape(s.name) + "</td><td>" + html_escape(s.kind) +
            "</td><td class=\"" + state + "</td><td>" + error + "</td><td>" +
            utc_time(s.last_success) + "</td></tr>\n";
  }
  return rows;
}

HttpResponse metrics(const Sampler& sampler, const HttpRequest& req) {
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  auto snap = sampler.latest();
  if (!snap) {
    r.status = 503;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "no sample taken yet\n";
    return r;
  }
  // The page is shared with the snapshot (aliasing shared_ptr), not copied per scrape.
  if (accepts_gzip(req.header("accept-encoding"))) {
    r.shared_body = std::shared_ptr<const std::string>(snap, &snap->gzipped());
    r.headers.push_back({"Content-Encoding", "gzip"});
  } else {
    r.shared_body = std::shared_ptr<const std::string>(snap, &snap->text());
  }
  r.headers.push_back({"Vary", "Accept-Encoding"});
  return r;
}

bool ready(const Sampler& sampler) {
  auto snap = sampler.latest();
  if (!snap) return false;
  double max_age = 3 * std::chrono::duration<double>(sampler.interval()).count();
  return unix_now() - snap->timestamp() <= max_age;
}

HttpResponse landing(const Sampler& sampler) {
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  auto snap = sampler.latest();
  std::string rows, sources;
  if (snap) {
    sources = source_rows(snap->sources());
    for (const auto& t : snap->targets()) {
      rows += "<tr><td>" + html_escape(t.name) + "</td><td><code>" + html_escape(t.selector) +
              "</code></td><td class=\"" + (t.up ? "up\">up" : "down\">down") + "</td><td>" +
              pid_list(t.pids, 20) + "</td></tr>\n";
    }
  }
  std::string collectors;
  for (const auto& name : sampler.collector_names()) {
    collectors += "<li>" + html_escape(name) + "</li>";
  }
  // No inline script or style: the Content-Security-Policy allows files from this origin only.
  r.headers.push_back({"Content-Security-Policy", kLivePageCsp});
  r.body = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>loadwatch</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/uPlot.min.css"><link rel="stylesheet" href="/static/live.css">
</head><body><h1>loadwatch</h1>
<p>Version )" LOADWATCH_VERSION " (" LOADWATCH_REVISION R"()</p>
<p><a href="/metrics">Metrics</a> · <a href="/api/v1/targets">Targets (JSON)</a> ·
<a href="/api/v1/sources">Sources (JSON)</a> ·
<a href="/api/v1/history/series">History (JSON)</a> ·
<a href="/api/v1/runs">Runs (JSON)</a> ·
<a href="/-/healthy">Health</a> · <a href="/-/ready">Readiness</a></p>
<h2>Targets</h2>
<table><tr><th>Name</th><th>Selector</th><th>State</th><th>PIDs</th></tr>
)" +
           (rows.empty() ? std::string("<tr><td colspan=\"4\">no targets configured</td></tr>\n")
                         : rows) +
           R"(</table>
<h2>Sources</h2>
<table><tr><th>Name</th><th>Kind</th><th>State</th><th>Last error</th><th>Last success</th></tr>
)" +
           (sources.empty() ? std::string("<tr><td colspan=\"5\">no sources configured</td></tr>\n")
                            : sources) +
           R"(</table>
<h2>Charts</h2><div id="live-run"></div><div id="charts"><p id="live-status">Loading the history…</p></div>
<h2>Collectors</h2><ul>)" +
           collectors + R"(</ul>
<script src="/static/uPlot.iife.min.js"></script><script src="/static/live.js"></script>
</body></html>
)";
  return r;
}

/// The API's answer around `data`, as Prometheus's API shapes it; bytes that are not UTF-8
/// (a process name, a source's error) are replaced, never a throw.
HttpResponse api_success(nlohmann::json data) {
  HttpResponse r;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"status", "success"}, {"data", std::move(data)}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

HttpResponse targets_json(const Sampler& sampler) {
  nlohmann::json out = nlohmann::json::array();
  if (auto snap = sampler.latest()) {
    for (const auto& t : snap->targets()) {
      out.push_back({{"name", t.name},
                     {"selector", t.selector},
                     {"up", t.up},
                     {"pids", t.pids},
                     {"listen_ports", t.listen_ports}});
    }
  }
  return api_success(std::move(out));
}

HttpResponse sources_json(const Sampler& sampler) {
  nlohmann::json out = nlohmann::json::array();
  if (auto snap = sampler.latest()) {
    for (const auto& s : snap->sources()) {
      out.push_back({{"name", s.name},
                     {"kind", s.kind},
                     {"up", s.up},
                     {"scrapes", s.scrapes},
                     {"last_error_reason", s.last_error_reason},
                     {"last_error", s.last_error},
                     {"last_success", s.last_success > 0 ? nlohmann::json(s.last_success)
                                                         : nlohmann::json(nullptr)}});
    }
  }
  return api_success(std::move(out));
}

}  // namespace

void add_web_routes(HttpServer& server, const Sampler& sampler) {
  server.route("/metrics", [&sampler](const HttpRequest& req) { return metrics(sampler, req); });
  server.route("/", [&sampler](const HttpRequest&) { return landing(sampler); });
  server.route("/api/v1/targets", [&sampler](const HttpRequest&) { return targets_json(sampler); });
  server.route("/api/v1/sources", [&sampler](const HttpRequest&) { return sources_json(sampler); });
  server.route("/-/healthy", [](const HttpRequest&) {
    HttpResponse r;
    r.body = "OK\n";
    return r;
  });
  server.route("/-/ready", [&sampler](const HttpRequest&) {
    HttpResponse r;
    bool ok = ready(sampler);
    r.status = ok ? 200 : 503;
    r.body = ok ? "Ready\n" : "Not ready: no sample published in the last 3 intervals\n";
    return r;
  });
}

}  // namespace loadwatch
