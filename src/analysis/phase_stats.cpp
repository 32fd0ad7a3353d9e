#include "analysis/phase_stats.h"

#include "analysis/json_fields.h"

namespace loadwatch::analysis {

namespace jf = json_fields;
using nlohmann::json;
using ojson = nlohmann::ordered_json;

const TargetPhaseStats* PhaseStats::target(const std::string& target_name) const {
  for (const TargetPhaseStats& t : targets) {
    if (t.name == target_name) return &t;
  }
  return nullptr;
}

void to_json(ojson& j, const TargetPhaseStats& t) {
  j = ojson::object();
  j["name"] = t.name;
  jf::put(j, "cpu_cores", t.cpu_cores);
  jf::put(j, "busiest_process_core_share", t.busiest_process_core_share);
  jf::put(j, "cpu_limit_cores", t.cpu_limit_cores);
  jf::put(j, "nice", t.nice);
  jf::put(j, "rss_start_bytes", t.rss_start_bytes);
  jf::put(j, "rss_end_bytes", t.rss_end_bytes);
  jf::put(j, "rss_slope_bytes_per_second", t.rss_slope_bytes_per_second);
  jf::put(j, "open_fds_max", t.open_fds_max);
  jf::put(j, "fd_limit", t.fd_limit);
  jf::put(j, "throttled_period_ratio", t.throttled_period_ratio);
  jf::put(j, "throttled_seconds_per_second", t.throttled_seconds_per_second);
}

void from_json(const json& j, TargetPhaseStats& t) {
  if (!j.is_object()) throw std::invalid_argument("expected an object");
  auto name = jf::string(j, "name");
  if (!name || name->empty()) throw std::invalid_argument("name: missing");
  t.name = *name;
  t.cpu_cores = jf::non_negative(j, "cpu_cores");
  t.busiest_process_core_share = jf::non_negative(j, "busiest_process_core_share");
  t.cpu_limit_cores = jf::non_negative(j, "cpu_limit_cores");
  t.nice = jf::number(j, "nice");
  if (t.nice && (*t.nice < -20 || *t.nice > 19)) {
    throw std::invalid_argument("nice: outside -20..19");
  }
  t.rss_start_bytes = jf::non_negative(j, "rss_start_bytes");
  t.rss_end_bytes = jf::non_negative(j, "rss_end_bytes");
  t.rss_slope_bytes_per_second = jf::number(j, "rss_slope_bytes_per_second");
  t.open_fds_max = jf::non_negative(j, "open_fds_max");
  t.fd_limit = jf::non_negative(j, "fd_limit");
  t.throttled_period_ratio = jf::ratio(j, "throttled_period_ratio");
  t.throttled_seconds_per_second = jf::non_negative(j, "throttled_seconds_per_second");
}

void to_json(ojson& j, const HostPhaseStats& h) {
  j = ojson::object();
  jf::put(j, "cores", h.cores);
  if (!h.cpu_cores_by_mode.empty()) j["cpu_cores_by_mode"] = h.cpu_cores_by_mode;
  jf::put(j, "softirq_cores", h.softirq_cores);
  jf::put(j, "time_wait_max", h.time_wait_max);
  jf::put(j, "time_wait_limit", h.time_wait_limit);
  jf::put(j, "listen_overflows", h.listen_overflows);
  jf::put(j, "ephemeral_port_ratio_max", h.ephemeral_port_ratio_max);
  jf::put(j, "cpu_busy_cores", h.cpu_busy_cores);
  jf::put(j, "others_cpu_cores", h.others_cpu_cores);
  jf::put(j, "run_queue_mean", h.run_queue_mean);
  jf::put(j, "cpu_pressure_ratio", h.cpu_pressure_ratio);
  jf::put(j, "memory_pressure_ratio", h.memory_pressure_ratio);
  jf::put(j, "memory_stall_ratio", h.memory_stall_ratio);
  jf::put(j, "io_pressure_ratio", h.io_pressure_ratio);
  jf::put(j, "io_stall_ratio", h.io_stall_ratio);
  jf::put(j, "swap_in_pages_per_second", h.swap_in_pages_per_second);
  jf::put(j, "swap_out_pages_per_second", h.swap_out_pages_per_second);
  if (!h.top_cpu_cores.empty()) j["top_cpu_cores"] = h.top_cpu_cores;
  jf::put(j, "sample_gap_seconds", h.sample_gap_seconds);
}

void from_json(const json& j, HostPhaseStats& h) {
  if (!j.is_object()) throw std::invalid_argument("expected an object");
  if (auto cores = jf::integer(j, "cores")) {
    if (*cores < 1) throw std::invalid_argument("cores: must be at least 1");
    h.cores = static_cast<int>(*cores);
  }
  h.cpu_cores_by_mode.clear();
  if (const json* modes = jf::object(j, "cpu_cores_by_mode")) {
    for (const auto& item : modes->items()) {
      const std::string& mode = item.key();  // a named variable: clang 14 cannot capture bindings
      jf::within("cpu_cores_by_mode.", [&] {
        if (auto cores = jf::non_negative(*modes, mode.c_str())) h.cpu_cores_by_mode[mode] = *cores;
      });
    }
  }
  h.softirq_cores = jf::non_negative(j, "softirq_cores");
  h.time_wait_max = jf::non_negative(j, "time_wait_max");
  h.time_wait_limit = jf::non_negative(j, "time_wait_limit");
  h.listen_overflows = jf::non_negative(j, "listen_overflows");
  // Sockets toward one destination over the range's size: above 1 when clients bind several
  // local addresses (127.0.0.2, 127.0.0.3, ...), each with the whole range.
  h.ephemeral_port_ratio_max = jf::non_negative(j, "ephemeral_port_ratio_max");
  h.cpu_busy_cores = jf::non_negative(j, "cpu_busy_cores");
  h.others_cpu_cores = jf::non_negative(j, "others_cpu_cores");
  h.run_queue_mean = jf::non_negative(j, "run_queue_mean");
  h.cpu_pressure_ratio = jf::ratio(j, "cpu_pressure_ratio");
  h.memory_pressure_ratio = jf::ratio(j, "memory_pressure_ratio");
  h.memory_stall_ratio = jf::ratio(j, "memory_stall_ratio");
  h.io_pressure_ratio = jf::ratio(j, "io_pressure_ratio");
  h.io_stall_ratio = jf::ratio(j, "io_stall_ratio");
  h.swap_in_pages_per_second = jf::non_negative(j, "swap_in_pages_per_second");
  h.swap_out_pages_per_second = jf::non_negative(j, "swap_out_pages_per_second");
  h.sample_gap_seconds = jf::non_negative(j, "sample_gap_seconds");
  h.top_cpu_cores.clear();
  if (const json* top = jf::object(j, "top_cpu_cores")) {
    for (const auto& item : top->items()) {
      const std::string& comm = item.key();
      jf::within("top_cpu_cores.", [&] {
        if (auto cores = jf::non_negative(*top, comm.c_str())) h.top_cpu_cores[comm] = *cores;
      });
    }
  }
}

void to_json(ojson& j, const MockPhaseStats& m) {
  j = ojson::object();
  jf::put(j, "p95_seconds", m.p95_seconds);
  jf::put(j, "error_ratio", m.error_ratio);
}

void from_json(const json& j, MockPhaseStats& m) {
  if (!j.is_object()) throw std::invalid_argument("expected an object");
  m.p95_seconds = jf::non_negative(j, "p95_seconds");
  m.error_ratio = jf::ratio(j, "error_ratio");
}

void to_json(ojson& j, const PhaseStats& p) {
  j = ojson::object();
  j["name"] = p.name;
  jf::put(j, "users", p.users);
  jf::put(j, "start", p.start);
  jf::put(j, "end", p.end);
  jf::put(j, "duration_seconds", p.duration_seconds);
  jf::put(j, "stable_start", p.stable_start);
  jf::put(j, "stable_seconds", p.stable_seconds);
  jf::put(j, "warmup_rule", p.warmup_rule);
  jf::put(j, "rps", p.rps);
  jf::put(j, "rps_low", p.rps_low);
  jf::put(j, "rps_high", p.rps_high);
  jf::put(j, "rps_window_start", p.rps_window_start);
  jf::put(j, "rps_window_end", p.rps_window_end);
  jf::put(j, "rps_method", p.rps_method);
  jf::put(j, "rps_unavailable", p.rps_unavailable);
  jf::put(j, "p50_seconds", p.p50_seconds);
  jf::put(j, "p95_seconds", p.p95_seconds);
  jf::put(j, "p99_seconds", p.p99_seconds);
  jf::put(j, "p50_low_seconds", p.p50_low_seconds);
  jf::put(j, "p50_high_seconds", p.p50_high_seconds);
  jf::put(j, "p95_low_seconds", p.p95_low_seconds);
  jf::put(j, "p95_high_seconds", p.p95_high_seconds);
  jf::put(j, "p99_low_seconds", p.p99_low_seconds);
  jf::put(j, "p99_high_seconds", p.p99_high_seconds);
  jf::put(j, "latency_method", p.latency_method);
  jf::put(j, "latency_window", p.latency_window);
  jf::put(j, "latency_unavailable", p.latency_unavailable);
  jf::put(j, "error_ratio", p.error_ratio);
  if (!p.targets.empty()) j["targets"] = p.targets;
  ojson host = p.host;
  if (!host.empty()) j["host"] = std::move(host);
  jf::put(j, "generator_target", p.generator_target);
  ojson mock = p.mock;
  if (!mock.empty()) j["mock"] = std::move(mock);
}

void from_json(const json& j, PhaseStats& p) {
  if (!j.is_object()) throw std::invalid_argument("expected an object");
  auto name = jf::string(j, "name");
  if (!name || name->empty()) throw std::invalid_argument("name: missing");
  p.name = *name;
  p.users = jf::integer(j, "users");
  if (p.users && (*p.users < 0 || *p.users > 1'000'000'000'000)) {
    throw std::invalid_argument("users: must be 0..10^12");
  }
  p.start = jf::number(j, "start");
  p.end = jf::number(j, "end");
  p.duration_seconds = jf::non_negative(j, "duration_seconds");
  p.stable_start = jf::number(j, "stable_start");
  p.stable_seconds = jf::non_negative(j, "stable_seconds");
  p.warmup_rule = jf::string(j, "warmup_rule").value_or("");
  p.rps = jf::non_negative(j, "rps");
  p.rps_low = jf::non_negative(j, "rps_low");
  p.rps_high = jf::non_negative(j, "rps_high");
  if (p.rps && ((p.rps_low && *p.rps_low > *p.rps) || (p.rps_high && *p.rps_high < *p.rps))) {
    throw std::invalid_argument("rps_low, rps_high: must bound rps");
  }
  p.rps_window_start = jf::number(j, "rps_window_start");
  p.rps_window_end = jf::number(j, "rps_window_end");
  p.rps_method = jf::string(j, "rps_method").value_or("");
  p.rps_unavailable = jf::string(j, "rps_unavailable").value_or("");
  p.p50_seconds = jf::non_negative(j, "p50_seconds");
  p.p95_seconds = jf::non_negative(j, "p95_seconds");
  p.p99_seconds = jf::non_negative(j, "p99_seconds");
  p.p50_low_seconds = jf::non_negative(j, "p50_low_seconds");
  p.p50_high_seconds = jf::non_negative(j, "p50_high_seconds");
  p.p95_low_seconds = jf::non_negative(j, "p95_low_seconds");
  p.p95_high_seconds = jf::non_negative(j, "p95_high_seconds");
  p.p99_low_seconds = jf::non_negative(j, "p99_low_seconds");
  p.p99_high_seconds = jf::non_negative(j, "p99_high_seconds");
  p.latency_method = jf::string(j, "latency_method").value_or("");
  p.latency_window = jf::string(j, "latency_window").value_or("");
  p.latency_unavailable = jf::string(j, "latency_unavailable").value_or("");
  p.error_ratio = jf::ratio(j, "error_ratio");
  p.targets.clear();
  if (const json* targets = jf::array(j, "targets")) {
    for (std::size_t i = 0; i < targets->size(); ++i) {
      jf::within("targets[" + std::to_string(i) + "].",
                 [&] { p.targets.push_back((*targets)[i].get<TargetPhaseStats>()); });
    }
  }
  p.host = {};
  if (const json* host = jf::object(j, "host")) {
    jf::within("host.", [&] { p.host = host->get<HostPhaseStats>(); });
  }
  p.generator_target = jf::string(j, "generator_target");
  if (p.generator_target && !p.target(*p.generator_target)) {
    throw std::invalid_argument("generator_target: names no target of the phase");
  }
  p.mock = {};
  if (const json* mock = jf::object(j, "mock")) {
    jf::within("mock.", [&] { p.mock = mock->get<MockPhaseStats>(); });
  }
}

}  // namespace loadwatch::analysis
