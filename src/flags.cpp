#include "flags.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "cli/subcommands.h"
#include "collectors/collector.h"

namespace loadwatch {

namespace {

/// The HTTP caps against each other; sets o.max_connection_age. The error, if any. The default
/// share of connections per address shrinks with a smaller --web.max-connections; a share given
/// above it is an error.
std::optional<std::string> check_web_flags(Options& o, const std::string& connection_age,
                                           bool connections_per_address_given) {
  if (!connections_per_address_given) {
    o.max_connections_per_address = std::min(o.max_connections_per_address, o.max_connections);
  }
  if (o.max_requests_per_address > o.max_requests) {
    return "--web.max-requests-per-address=" + std::to_string(o.max_requests_per_address) +
           " is more than --web.max-requests=" + std::to_string(o.max_requests);
  }
  if (o.max_connections_per_address > o.max_connections) {
    return "--web.max-connections-per-address=" + std::to_string(o.max_connections_per_address) +
           " is more than --web.max-connections=" + std::to_string(o.max_connections);
  }
  try {
    o.max_connection_age = parse_duration(connection_age);
    if (o.max_connection_age.count() < 1000) throw std::invalid_argument("must be at least 1s");
  } catch (const std::invalid_argument& e) {
    return std::string("--web.max-connection-age: ") + e.what();
  }
  return std::nullopt;
}

}  // namespace

ParsedFlags parse_flags(int argc, char** argv) {
  ParsedFlags parsed;
  Options& o = parsed.options;
  CommandLine app{"loadwatch: a Prometheus exporter for load, stress and soak test runs",
                  "loadwatch"};
  app.capture_defaults();
  std::string footer = "Subcommands (loadwatch NAME --help for each):";
  for (const Subcommand& cmd : subcommands()) {
    footer += std::string("\n  ") + cmd.name + "  " + cmd.summary;
  }
  if (!subcommands().empty()) app.footer(footer);
  std::string interval = "1s";
  std::string runs_min_age = "1h";
  std::string connection_age = "5m";
  app.option("--config.file", o.config_file, "YAML config file");
  app.flag("--config.check", o.config_check, "Validate the config and flags, then exit 0/1");
  app.option("--web.listen-address", o.listen_address, "Address to serve /metrics on");
  app.option("--web.config.file", o.web_config_file,
             "exporter-toolkit compatible TLS and basic-auth file");
  app.option("--web.max-requests", o.max_requests, "Concurrent HTTP requests before 503")
      .range(1, 10000);
  app.option("--web.max-requests-per-address", o.max_requests_per_address,
             "Concurrent HTTP requests of one client address before 503 (default: a quarter "
             "of --web.max-requests, at least 2)")
      .range(1, 10000);
  app.option("--web.max-connections", o.max_connections,
             "HTTP connections open at once (idle and slow ones included)")
      .range(8, 100000);
  Flag connections_per_address =
      app.option("--web.max-connections-per-address", o.max_connections_per_address,
                 "HTTP connections one client address may hold")
          .range(1, 100000);
  app.option("--web.max-requests-per-connection", o.max_requests_per_connection,
             "Requests on one keep-alive HTTP connection before it is closed")
      .range(1, 1000000);
  app.option("--web.max-connection-age", connection_age,
             "Age at which a keep-alive HTTP connection is closed after its current request");
  app.option("--sample.interval", interval, "How often /proc is sampled (500ms, 1s, 2m)");
  app.option("--history.points", o.history_points,
             "Samples the in-memory history keeps (7200 = 2h at 1s); 0 turns it off")
      .range(0, 1000000);
  app.option("--history.max-series", o.history_max_series,
             "Most series the history keeps (4 bytes per point each)")
      .range(1, 100000);
  app.option("--metrics.push-max-bytes", o.metrics_push_max_bytes,
             "Bytes of /metrics shared fairly by pushes (Influx, Graphite), textfiles and "
             "pull sources' families; a family past its source's share is dropped")
      .range(std::size_t{1} << 16, std::size_t{1} << 32);
  app.option("--target", o.targets, "NAME=SELECTOR, repeatable (e.g. mb=port:2525)");
  app.option("--source", o.sources, "NAME=KIND,URL, repeatable (e.g. lc=locust,http://...)");
  app.option("--path.procfs", o.procfs, "procfs mount point");
  app.option("--path.sysfs", o.sysfs, "sysfs mount point");
  app.option("--log.level", o.log_level, "debug, info, warn, error");
  app.option("--log.format", o.log_format, "logfmt or json");
  app.flag("--tcp.force-procfs", o.tcp_force_procfs,
           "Read sockets from /proc/net/tcp{,6} instead of netlink sock_diag");
  app.option("--collector.textfile.directory", o.textfile_directory,
             "Directory of *.prom files to export (wrk summaries)");
  app.option("--graphite.listen-address", o.graphite_listen_address,
             "Graphite plaintext listener for JMeter's Backend Listener (off when empty)");
  app.flag("--web.enable-run-api", o.enable_run_api,
           "Allow starting, phasing and stopping runs over HTTP (POST /api/v1/runs...)");
  app.flag("--push.run-annotations", o.push_run_annotations,
           "Let pushes open, phase and close runs: JMeter's InfluxDB `events` annotations "
           "and the Locust listener's steps (unauthenticated unless --web.config.file sets "
           "basic auth)");
  app.option("--runs.min-age", runs_min_age,
             "A finished run younger than this is never deleted to make room (default 1h)");
  app.option("--storage.path", o.storage_path,
             "Directory where runs are kept across restarts (empty: in memory only)");
  app.flag("--version", parsed.show_version, "Print version, git revision and build date");

  // --collector.NAME / --no-collector.NAME for every collector in the table.
  std::vector<std::pair<std::string, std::pair<bool*, bool*>>> switches;
  std::vector<std::unique_ptr<bool>> storage;
  for (const auto& spec : collector_table()) {
    storage.push_back(std::make_unique<bool>(false));
    bool* on = storage.back().get();
    storage.push_back(std::make_unique<bool>(false));
    bool* off = storage.back().get();
    app.flag(std::string("--collector.") + spec.name, *on,
             std::string("Enable the ") + spec.name + " collector: " + spec.help);
    app.flag(std::string("--no-collector.") + spec.name, *off,
             std::string("Disable the ") + spec.name + " collector");
    switches.push_back({spec.name, {on, off}});
  }

  std::ostringstream out, err;
  if (auto code = app.parse(argc, argv, out, err)) {
    parsed.exit_code = *code;
    parsed.message = out.str() + err.str();
    return parsed;
  }
  try {
    o.sample_interval = parse_duration(interval);
    if (o.sample_interval.count() < 10) throw std::invalid_argument("must be at least 10ms");
  } catch (const std::invalid_argument& e) {
    parsed.message = std::string("--sample.interval: ") + e.what() + "\n";
    parsed.exit_code = 1;
    return parsed;
  }
  if (auto error = check_web_flags(o, connection_age, connections_per_address.count() > 0)) {
    parsed.message = *error + "\n";
    parsed.exit_code = 1;
    return parsed;
  }
  try {
    o.runs_min_age = parse_duration(runs_min_age);
  } catch (const std::invalid_argument& e) {
    parsed.message = std::string("--runs.min-age: ") + e.what() + "\n";
    parsed.exit_code = 1;
    return parsed;
  }
  for (const auto& [name, flags] : switches) {
    if (*flags.first && *flags.second) {
      parsed.message = "--collector." + name + " and --no-collector." + name + " both given\n";
      parsed.exit_code = 1;
      return parsed;
    }
    if (*flags.first) o.collectors[name] = true;
    if (*flags.second) o.collectors[name] = false;
  }
  return parsed;
}

void merge_flag_targets(Config& config, const Options& options) {
  std::set<std::string> names;
  for (const auto& t : config.targets) names.insert(t.name);
  for (const auto& flag : options.targets) {
    auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("--target=" + flag + ": want NAME=KIND:VALUE");
    }
    TargetConfig t;
    t.name = flag.substr(0, eq);
    try {
      t.match = parse_selector(flag.substr(eq + 1));
    } catch (const std::invalid_argument& e) {
      throw ConfigError("--target=" + flag + ": " + e.what());
    }
    if (!names.insert(t.name).second) {
      throw ConfigError("--target=" + flag + ": duplicate target name \"" + t.name + "\"");
    }
    config.targets.push_back(std::move(t));
  }
  std::set<std::string> source_names;
  for (const auto& s : config.sources) source_names.insert(s.name);
  for (const auto& flag : options.sources) {
    auto eq = flag.find('=');
    auto comma = flag.find(',', eq == std::string::npos ? 0 : eq);
    if (eq == std::string::npos || eq == 0 || comma == std::string::npos) {
      throw ConfigError("--source=" + flag + ": want NAME=KIND,URL");
    }
    // Built from the values, not by pasting them into YAML text: a URL may hold any
    // character (a quote, a brace) and must never add a setting.
    SourceConfig source;
    try {
      source = make_source(flag.substr(0, eq), flag.substr(eq + 1, comma - eq - 1),
                           flag.substr(comma + 1));
    } catch (const std::invalid_argument& e) {
      throw ConfigError("--source=" + flag + ": " + e.what());
    }
    if (!source_names.insert(source.name).second) {
      throw ConfigError("--source=" + flag + ": duplicate source name \"" + source.name + "\"");
    }
    config.sources.push_back(std::move(source));
  }
}

Config effective_config(const Options& options) {
  Config config;
  if (!options.config_file.empty()) config = load_config(options.config_file);
  merge_flag_targets(config, options);
  return config;
}

}  // namespace loadwatch
