#include "analysis/capacity_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/format_figures.h"
#include "analysis/json_fields.h"
#include "analysis/latency_knee.h"

namespace loadwatch::analysis {

namespace jf = json_fields;
using nlohmann::json;
using ojson = nlohmann::ordered_json;

std::vector<std::size_t> scaling_points(const std::vector<PhaseStats>& phases) {
  std::vector<std::size_t> out;
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const PhaseStats& p = phases[i];
    if (!p.users || *p.users <= 0 || !p.rps) continue;
    if (seen.insert(*p.users).second) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return *phases[a].users < *phases[b].users;
  });
  return out;
}

namespace {

PhaseRef ref(const std::vector<PhaseStats>& phases, std::size_t i) {
  return {i, phases[i].name, phases[i].users};
}

/// Users and one figure of the phases `pts` (which all have a user count and that figure).
struct Curve {
  std::vector<double> users, values;
};
Curve curve(const std::vector<PhaseStats>& phases, const std::vector<std::size_t>& pts,
            std::optional<double> PhaseStats::*figure) {
  Curve c;
  for (std::size_t i : pts) {
    c.users.push_back(static_cast<double>(*phases[i].users));
    c.values.push_back(*(phases[i].*figure));
  }
  return c;
}

/// Flat from the first step: no later phase's throughput rises more than kFlatThroughputRise
/// above the first one's upper bound. Then the knee is the data's shape, not a Kneedle point:
/// Kneedle marks a knee on any noise once the curve is normalised. A later phase's own bound
/// does not make it flat: wide bounds (a coarse source) that cannot rule out a flat curve do
/// not show one, and a curve rising from 10 to 20 req/s is not "saturated from the first step".
bool flat_from_first(const std::vector<PhaseStats>& phases, const std::vector<std::size_t>& pts) {
  const PhaseStats& first = phases[pts.front()];
  double ceiling = first.rps_high.value_or(*first.rps) * (1 + kFlatThroughputRise);
  for (std::size_t i : pts) {
    if (*phases[i].rps > ceiling) return false;
  }
  return true;
}

std::string rps_range(const std::vector<PhaseStats>& phases, const std::vector<std::size_t>& pts) {
  double lo = *phases[pts.front()].rps, hi = lo;
  for (std::size_t i : pts) lo = std::min(lo, *phases[i].rps), hi = std::max(hi, *phases[i].rps);
  return fmt_rps(lo) + "-" + fmt_rps(hi) + " req/s";
}

void find_knee(CapacityReport& r, const std::vector<std::size_t>& pts,
               const AnalysisOptions& options) {
  r.knee = {};
  r.knee.options = options.kneedle;
  if (pts.size() < 3) {
    r.knee.reason = "too few phases: the knee needs three user counts with a throughput";
    // Say how many there were, and why the others had none: a source too coarse for the
    // phase length is the usual cause, and its reason gives the numbers.
    if (!r.left_out_of_scaling.empty()) {
      r.knee.reason += ", " + std::to_string(pts.size()) + " had one; left out: ";
      for (std::size_t i = 0; i < r.left_out_of_scaling.size(); ++i) {
        r.knee.reason += (i ? "; " : "") + r.left_out_of_scaling[i];
      }
    }
    return;
  }
  if (flat_from_first(r.phases, pts)) {
    const PhaseStats& top = r.phases[pts.back()];
    Bottleneck at_top = find_bottleneck(top, nullptr, nullptr);
    bool generator = std::any_of(at_top.findings.begin(), at_top.findings.end(),
                                 [](const Finding& f) { return f.check == Check::generator_cpu; });
    std::string range = rps_range(r.phases, pts);
    char rise[32];
    std::snprintf(rise, sizeof rise, "%.0f %%", kFlatThroughputRise * 100);
    if (generator) {
      r.knee.shape = "generator_capped";
      r.knee.reason = "flat: the generator capped it (" + range + " from " +
                      std::to_string(*r.phases[pts.front()].users) + " users; its CPU saturated)";
    } else {
      r.knee.shape = "flat";
      r.knee.reason = "saturated from the first step: throughput stays within " +
                      std::string(rise) + " of the first step's (" + range + ")";
    }
    return;
  }
  Curve c = curve(r.phases, pts, &PhaseStats::rps);
  KneedleResult k = kneedle(c.users, c.values, options.kneedle);
  if (!k.knee) {
    r.knee.reason = "no knee: throughput keeps rising with users";
    return;
  }
  r.knee.phase = ref(r.phases, pts[*k.knee]);
  r.knee.rps = c.values[*k.knee];
}

void find_latency_knee(CapacityReport& r, const std::vector<std::size_t>& pts) {
  r.latency_knee = {};
  std::vector<std::size_t> with_p95;
  for (std::size_t i : pts) {
    if (r.phases[i].p95_seconds) with_p95.push_back(i);
  }
  if (with_p95.size() < kLatencyKneeMinEarlier + 1) {
    r.latency_knee.reason = "too few phases with a p95";
    return;
  }
  Curve c = curve(r.phases, with_p95, &PhaseStats::p95_seconds);
  auto k = latency_knee(c.users, c.values);
  if (!k) {
    r.latency_knee.reason = "no latency knee: p95 follows the trend of the lower loads";
    return;
  }
  r.latency_knee.phase = ref(r.phases, with_p95[k->index]);
  r.latency_knee.p95_seconds = k->p95_seconds;
  r.latency_knee.expected_p95_seconds = k->expected_seconds;
}

void fit(CapacityReport& r, const std::vector<std::size_t>& pts) {
  Curve c = curve(r.phases, pts, &PhaseStats::rps);
  r.usl = fit_usl(c.users, c.values);
}

void assess(CapacityReport& r, const std::vector<std::size_t>& pts) {
  r.bottleneck = {};
  std::optional<std::size_t> at;  // position in pts
  auto position = [&](const std::optional<PhaseRef>& p) -> std::optional<std::size_t> {
    if (!p) return std::nullopt;
    auto it = std::find(pts.begin(), pts.end(), p->index);
    if (it == pts.end()) return std::nullopt;
    return static_cast<std::size_t>(it - pts.begin());
  };
  if ((at = position(r.knee.phase))) {
    r.bottleneck.basis = "throughput knee";
  } else if ((at = position(r.latency_knee.phase))) {
    r.bottleneck.basis = "latency knee";
  } else if (!pts.empty()) {
    at = pts.size() - 1;
    r.bottleneck.basis = "highest load";
  } else if (!r.phases.empty()) {
    // No user counts at all: the last phase is the heaviest one we know of.
    r.bottleneck.phase = ref(r.phases, r.phases.size() - 1);
    r.bottleneck.basis = "last phase";
    r.bottleneck.result = find_bottleneck(r.phases.back(), nullptr, nullptr);
    return;
  } else {
    r.bottleneck.result.summary = "not assessed: the report has no phases";
    return;
  }
  const PhaseStats& phase = r.phases[pts[*at]];
  const PhaseStats* previous = *at > 0 ? &r.phases[pts[*at - 1]] : nullptr;
  const PhaseStats* lowest = &r.phases[pts.front()];
  r.bottleneck.phase = ref(r.phases, pts[*at]);
  const PhaseStats* highest = &r.phases[pts.back()];
  r.bottleneck.result = find_bottleneck(phase, previous, lowest, highest);
}

// ---- JSON ----

void put_ref(ojson& j, const std::optional<PhaseRef>& p) {
  if (!p) return;
  j["phase"] = p->name;
  j["phase_index"] = p->index;
  jf::put(j, "users", p->users);
}

std::optional<PhaseRef> get_ref(const json& j, const std::vector<PhaseStats>& phases) {
  auto index = jf::integer(j, "phase_index");
  if (!index) return std::nullopt;
  if (*index < 0 || static_cast<std::size_t>(*index) >= phases.size()) {
    throw std::invalid_argument("phase_index: no such phase");
  }
  const PhaseStats& p = phases[static_cast<std::size_t>(*index)];
  if (jf::string(j, "phase").value_or(p.name) != p.name) {
    throw std::invalid_argument("phase: does not match phase_index");
  }
  return PhaseRef{static_cast<std::size_t>(*index), p.name, p.users};
}

ojson knee_json(const ThroughputKnee& k) {
  ojson j = {
      {"method", "kneedle"}, {"sensitivity", k.options.sensitivity}, {"online", k.options.online}};
  put_ref(j, k.phase);
  jf::put(j, "rps", k.rps);
  jf::put(j, "reason", k.reason);
  jf::put(j, "shape", k.shape);
  return j;
}

ojson latency_knee_json(const LatencyKneeFinding& k) {
  ojson j = {{"method", "p95 above the Theil-Sen line of the lower loads"},
             {"rise", kLatencyKneeRise},
             {"floor_seconds", kLatencyKneeFloorSeconds}};
  put_ref(j, k.phase);
  jf::put(j, "p95_seconds", k.p95_seconds);
  jf::put(j, "expected_p95_seconds", k.expected_p95_seconds);
  jf::put(j, "reason", k.reason);
  return j;
}

ojson usl_json(const UslFit& u) {
  ojson j = {{"fitted", u.fitted}, {"points", u.points}, {"min_r_squared", kUslMinRSquared}};
  if (!u.fitted) {
    j["reason"] = u.reason;
    return j;
  }
  j["alpha"] = u.params.alpha;
  j["beta"] = u.params.beta;
  j["gamma"] = u.params.gamma;
  j["r_squared"] = u.r_squared;
  jf::put(j, "peak_users", u.peak_users);
  jf::put(j, "peak_rps", u.peak_throughput);
  return j;
}

ojson bottleneck_json(const BottleneckFinding& b) {
  ojson j = ojson::object();
  put_ref(j, b.phase);
  jf::put(j, "basis", b.basis);
  j["assessed"] = b.result.assessed;
  j["summary"] = b.result.summary;
  ojson findings = ojson::array();
  for (const Finding& f : b.result.findings) {
    ojson o = {{"check", check_name(f.check)},
               {"subject", f.subject},
               {"evidence", f.evidence},
               {"value", f.value}};
    jf::put(o, "value_low", f.value_low);
    jf::put(o, "value_high", f.value_high);
    o["threshold"] = f.threshold;
    findings.push_back(std::move(o));
  }
  j["findings"] = std::move(findings);
  j["thresholds"] = {{"process_core_share", kProcessCoreSaturation},
                     {"target_cores_share", kTargetCoresSaturation},
                     {"mock_error_ratio", kMockErrorRatio},
                     {"mock_latency_growth", kMockLatencyGrowth},
                     {"mock_latency_share", kMockLatencyShare},
                     {"port_usage_ratio", kPortUsageRatio},
                     {"fd_usage_ratio", kFdUsageRatio},
                     {"softirq_share", kSoftirqShare},
                     {"host_cpu_share", kHostCpuSaturation},
                     {"cpu_pressure_ratio", kCpuPressureRatio},
                     {"run_queue_per_core", kRunQueuePerCore},
                     {"throttled_period_ratio", kThrottledPeriodRatio},
                     {"memory_pressure_ratio", kMemoryPressureRatio},
                     {"swap_pages_per_second", kSwapPagesPerSecond},
                     {"io_pressure_ratio", kIoPressureRatio},
                     {"iowait_share", kIowaitShare},
                     {"queue_latency_growth", kQueueLatencyGrowth}};
  return j;
}

void read_knee(const json& j, CapacityReport& r) {
  r.knee.options.sensitivity = jf::number(j, "sensitivity").value_or(1.0);
  r.knee.options.online = jf::boolean(j, "online").value_or(false);
  r.knee.phase = get_ref(j, r.phases);
  r.knee.rps = jf::non_negative(j, "rps");
  r.knee.reason = jf::string(j, "reason").value_or("");
  r.knee.shape = jf::string(j, "shape").value_or("");
}

void read_latency_knee(const json& j, CapacityReport& r) {
  r.latency_knee.phase = get_ref(j, r.phases);
  r.latency_knee.p95_seconds = jf::non_negative(j, "p95_seconds");
  r.latency_knee.expected_p95_seconds = jf::non_negative(j, "expected_p95_seconds");
  r.latency_knee.reason = jf::string(j, "reason").value_or("");
}

void read_usl(const json& j, CapacityReport& r) {
  UslFit& u = r.usl;
  u.fitted = jf::boolean(j, "fitted").value_or(false);
  u.points =
      static_cast<std::size_t>(std::max<std::int64_t>(0, jf::integer(j, "points").value_or(0)));
  u.reason = jf::string(j, "reason").value_or("");
  if (!u.fitted) return;
  auto need = [&](const char* key) {
    auto v = jf::number(j, key);
    if (!v) throw std::invalid_argument(std::string(key) + ": missing in a fitted model");
    return *v;
  };
  u.params = {need("alpha"), need("beta"), need("gamma")};
  u.r_squared = need("r_squared");
  u.peak_users = jf::non_negative(j, "peak_users");
  u.peak_throughput = jf::non_negative(j, "peak_rps");
}

void read_bottleneck(const json& j, CapacityReport& r) {
  BottleneckFinding& b = r.bottleneck;
  b.phase = get_ref(j, r.phases);
  b.basis = jf::string(j, "basis").value_or("");
  b.result.assessed = jf::boolean(j, "assessed").value_or(false);
  b.result.summary = jf::string(j, "summary").value_or("");
  b.result.findings.clear();
  if (const json* findings = jf::array(j, "findings")) {
    for (std::size_t i = 0; i < findings->size(); ++i) {
      jf::within("findings[" + std::to_string(i) + "].", [&] {
        const json& f = (*findings)[i];
        if (!f.is_object()) throw std::invalid_argument("expected an object");
        auto check = check_from_name(jf::string(f, "check").value_or(""));
        if (!check) throw std::invalid_argument("check: unknown");
        b.result.findings.push_back(
            {*check, jf::string(f, "subject").value_or(""), jf::string(f, "evidence").value_or(""),
             jf::number(f, "value").value_or(0), jf::number(f, "threshold").value_or(0),
             jf::number(f, "value_low"), jf::number(f, "value_high")});
      });
    }
  }
}

}  // namespace

void analyse(CapacityReport& report, const AnalysisOptions& options) {
  std::vector<std::size_t> pts = scaling_points(report.phases);
  report.left_out_of_scaling.clear();
  for (const PhaseStats& p : report.phases) {
    if (!p.users || *p.users <= 0 || p.rps) continue;
    report.left_out_of_scaling.push_back(
        fmt_phase(p.name, p.users) + ": no req/s" +
        (p.rps_unavailable.empty() ? std::string() : " (" + p.rps_unavailable + ")"));
  }
  find_knee(report, pts, options);
  find_latency_knee(report, pts);
  fit(report, pts);
  assess(report, pts);
}

void to_json(ojson& j, const CapacityReport& r) {
  j = ojson::object();
  j["format"] = "loadwatch-capacity-report";
  j["version"] = kReportVersion;
  if (r.run) {
    ojson run = {{"id", r.run->id}, {"name", r.run->name}};
    if (!r.run->labels.empty()) run["labels"] = r.run->labels;
    jf::put(run, "start", r.run->start);
    jf::put(run, "end", r.run->end);
    jf::put(run, "status", r.run->status);
    if (!r.run->hosts.empty()) run["hosts"] = r.run->hosts;
    j["run"] = std::move(run);
  }
  jf::put(j, "input", r.input);
  j["phases"] = r.phases;
  if (!r.left_out_of_scaling.empty()) j["left_out_of_scaling"] = r.left_out_of_scaling;
  j["knee"] = knee_json(r.knee);
  j["latency_knee"] = latency_knee_json(r.latency_knee);
  j["usl"] = usl_json(r.usl);
  j["bottleneck"] = bottleneck_json(r.bottleneck);
}

void from_json(const json& j, CapacityReport& r) {
  if (!j.is_object()) throw std::invalid_argument("a report is a JSON object");
  if (jf::string(j, "format").value_or("") != "loadwatch-capacity-report") {
    throw std::invalid_argument("format: not a loadwatch capacity report");
  }
  auto version = jf::integer(j, "version");
  if (!version || *version < 1 || *version > kReportVersion) {
    throw std::invalid_argument("version: unsupported (this loadwatch reads " +
                                std::to_string(kReportVersion) + ")");
  }
  r = {};
  if (const json* run = jf::object(j, "run")) {
    jf::within("run.", [&] {
      RunInfo info;
      info.id = jf::string(*run, "id").value_or("");
      info.name = jf::string(*run, "name").value_or("");
      if (const json* labels = jf::object(*run, "labels")) {
        for (const auto& [k, v] : labels->items()) {
          if (!v.is_string()) throw std::invalid_argument("labels." + k + ": expected a string");
          info.labels[k] = v.get<std::string>();
        }
      }
      info.start = jf::number(*run, "start");
      info.end = jf::number(*run, "end");
      info.status = jf::string(*run, "status").value_or("");
      if (const json* hosts = jf::array(*run, "hosts")) {
        for (const auto& h : *hosts) {
          if (!h.is_string()) throw std::invalid_argument("hosts: expected strings");
          info.hosts.push_back(h.get<std::string>());
        }
      }
      r.run = std::move(info);
    });
  }
  r.input = jf::string(j, "input").value_or("");
  const json* phases = jf::array(j, "phases");
  if (!phases) throw std::invalid_argument("phases: missing");
  for (std::size_t i = 0; i < phases->size(); ++i) {
    jf::within("phases[" + std::to_string(i) + "].",
               [&] { r.phases.push_back((*phases)[i].get<PhaseStats>()); });
  }
  if (const json* left = jf::array(j, "left_out_of_scaling")) {
    for (const json& l : *left) {
      if (!l.is_string()) throw std::invalid_argument("left_out_of_scaling: expected strings");
      r.left_out_of_scaling.push_back(l.get<std::string>());
    }
  }
  if (const json* k = jf::object(j, "knee")) jf::within("knee.", [&] { read_knee(*k, r); });
  if (const json* k = jf::object(j, "latency_knee")) {
    jf::within("latency_knee.", [&] { read_latency_knee(*k, r); });
  }
  if (const json* u = jf::object(j, "usl")) jf::within("usl.", [&] { read_usl(*u, r); });
  if (const json* b = jf::object(j, "bottleneck")) {
    jf::within("bottleneck.", [&] { read_bottleneck(*b, r); });
  }
}

}  // namespace loadwatch::analysis
