// The capacity report laid out for people: which figures go in which table, and the sentences
// that state the knee, the fit and the bottleneck.
#include <cstdio>

#include "analysis/change_points.h"
#include "analysis/format_figures.h"
#include "analysis/latency_knee.h"
#include "analysis/render.h"

namespace loadwatch::analysis {

namespace {

std::string users_text(const std::optional<std::int64_t>& users) {
  return users ? std::to_string(*users) : std::string(kNoFigure);
}

std::string phase_text(const PhaseRef& p) { return fmt_phase(p.name, p.users); }

std::string mib_per_minute(double bytes_per_second) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.2f MiB/min", bytes_per_second * 60 / (1024.0 * 1024.0));
  return buf;
}

/// "±1.2 %" of rps from its bound.
std::string rps_uncertainty(const PhaseStats& p) {
  if (!p.rps || !p.rps_low || !p.rps_high || *p.rps <= 0) return kNoFigure;
  return fmt_uncertainty((*p.rps_high - *p.rps_low) / 2 / *p.rps);
}

/// "10.0-20.0 ms": the bucket a histogram quantile lies in.
std::string quantile_bound(std::optional<double> low, std::optional<double> high) {
  if (!low || !high) return kNoFigure;
  std::string hi = fmt_ms(*high);
  return fmt_ms(*low).substr(0, fmt_ms(*low).find(' ')) + "-" + hi;
}

Table phase_table(const CapacityReport& r) {
  Table t;
  t.header = {"Phase", "Users",     "Duration", "Stable", "RPS",      "RPS ±",      "p50",
              "p95",   "p95 bound", "p99",      "Errors", "Mock p95", "Mock errors"};
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  for (const PhaseStats& p : r.phases) {
    t.rows.push_back({p.name, users_text(p.users), fmt_opt(p.duration_seconds, fmt_seconds),
                      fmt_opt(p.stable_seconds, fmt_seconds), fmt_opt(p.rps, fmt_rps),
                      rps_uncertainty(p), fmt_opt(p.p50_seconds, fmt_ms),
                      fmt_opt(p.p95_seconds, fmt_ms),
                      quantile_bound(p.p95_low_seconds, p.p95_high_seconds),
                      fmt_opt(p.p99_seconds, fmt_ms), fmt_opt(p.error_ratio, fmt_pct),
                      fmt_opt(p.mock.p95_seconds, fmt_ms), fmt_opt(p.mock.error_ratio, fmt_pct)});
  }
  t.drop_empty_columns(2);
  t.drop_duplicate_column(0, 1);
  t.id = "phases";
  if (r.knee.phase) {
    t.marked_row = r.knee.phase->index;
    t.mark = "knee";
  }
  return t;
}

Table target_table(const CapacityReport& r) {
  Table t;
  t.header = {"Phase",     "Target",  "CPU cores", "Busiest proc", "Throttled",
              "RSS start", "RSS end", "RSS slope", "FDs max",      "FD limit"};
  t.numeric = {false, false, true, true, true, true, true, true, true, true};
  for (const PhaseStats& p : r.phases) {
    for (const TargetPhaseStats& tg : p.targets) {
      std::string name = tg.name;
      if (p.generator_target && *p.generator_target == tg.name) name += " (generator)";
      std::string cores = fmt_opt(tg.cpu_cores, fmt_cores);
      if (tg.cpu_cores && tg.cpu_limit_cores) cores += " of " + fmt_cores(*tg.cpu_limit_cores);
      t.rows.push_back({p.name, name, cores, fmt_opt(tg.busiest_process_core_share, fmt_cores),
                        fmt_opt(tg.throttled_period_ratio, fmt_pct),
                        fmt_opt(tg.rss_start_bytes, fmt_mib), fmt_opt(tg.rss_end_bytes, fmt_mib),
                        fmt_opt(tg.rss_slope_bytes_per_second, mib_per_minute),
                        fmt_opt(tg.open_fds_max, fmt_count), fmt_opt(tg.fd_limit, fmt_count)});
    }
  }
  t.drop_empty_columns(2);
  return t;
}

/// One row per phase from `cells`, a table of none when no phase has host figures.
template <typename Cells>
Table host_rows(const CapacityReport& r, std::vector<std::string> header, Cells cells) {
  Table t;
  t.header = std::move(header);
  t.numeric.assign(t.header.size(), true);
  t.numeric[0] = false;
  bool any = false;
  for (const PhaseStats& p : r.phases) {
    std::vector<std::string> row(t.header.size(), kNoFigure);
    row[0] = p.name;
    if (!(p.host == HostPhaseStats{})) {
      any = true;
      row = cells(p);
    }
    t.rows.push_back(std::move(row));
  }
  if (!any) t.rows.clear();
  t.drop_empty_columns(1);
  return t;
}

/// The host's CPU: busy cores and who used them, by mode (steal included), the run queue and
/// CPU pressure.
Table host_cpu_table(const CapacityReport& r) {
  static const char* const modes[] = {"user", "nice", "system", "iowait", "irq", "steal"};
  std::vector<std::string> header = {"Phase", "Cores", "Busy", "Others"};
  for (const char* m : modes) header.push_back(m);
  for (const char* h : {"softirq", "Run queue", "CPU pressure", "Busiest processes"}) {
    header.push_back(h);
  }
  return host_rows(r, std::move(header), [](const PhaseStats& p) {
    const HostPhaseStats& h = p.host;
    std::vector<std::string> row = {p.name, h.cores ? std::to_string(*h.cores) : kNoFigure,
                                    fmt_opt(h.cpu_busy_cores, fmt_cores),
                                    fmt_opt(h.others_cpu_cores, fmt_cores)};
    for (const char* m : modes) {
      auto it = h.cpu_cores_by_mode.find(m);
      row.push_back(it == h.cpu_cores_by_mode.end() ? kNoFigure : fmt_cores(it->second));
    }
    row.push_back(fmt_opt(h.softirq_cores, fmt_cores));
    row.push_back(fmt_opt(h.run_queue_mean, [](double v) { return fmt_number(v, 3); }));
    row.push_back(fmt_opt(h.cpu_pressure_ratio, fmt_pct));
    std::string busiest = fmt_busiest(h.top_cpu_cores);
    row.push_back(busiest.empty() ? kNoFigure : busiest);
    return row;
  });
}

/// The host's memory, I/O and TCP: pressure, swapping, and the connection limits.
Table host_system_table(const CapacityReport& r) {
  auto per_second = [](double v) { return fmt_number(v, 3) + "/s"; };
  return host_rows(
      r,
      {"Phase", "Memory pressure", "Memory stall", "Swap in", "Swap out", "I/O pressure",
       "I/O stall", "TIME_WAIT max", "Listen overflows", "Ephemeral ports peak"},
      [&](const PhaseStats& p) {
        const HostPhaseStats& h = p.host;
        std::string tw = fmt_opt(h.time_wait_max, fmt_count);
        if (h.time_wait_max && h.time_wait_limit) tw += " / " + fmt_count(*h.time_wait_limit);
        return std::vector<std::string>{p.name,
                                        fmt_opt(h.memory_pressure_ratio, fmt_pct),
                                        fmt_opt(h.memory_stall_ratio, fmt_pct),
                                        fmt_opt(h.swap_in_pages_per_second, per_second),
                                        fmt_opt(h.swap_out_pages_per_second, per_second),
                                        fmt_opt(h.io_pressure_ratio, fmt_pct),
                                        fmt_opt(h.io_stall_ratio, fmt_pct),
                                        tw,
                                        fmt_opt(h.listen_overflows, fmt_count),
                                        fmt_opt(h.ephemeral_port_ratio_max, fmt_pct)};
      });
}

/// How req/s and the latency quantiles were measured, and why a phase has no req/s.
void measurement_lines(const CapacityReport& r, Section& s) {
  std::string rps_method, latency;
  for (const PhaseStats& p : r.phases) {
    if (rps_method.empty()) rps_method = p.rps_method;
    if (latency.empty() && !p.latency_window.empty()) latency = p.latency_window;
  }
  if (!rps_method.empty()) s.lines.push_back("Req/s: " + rps_method + "; RPS ± is its bound.");
  if (!latency.empty()) s.lines.push_back("Latency p50/p95/p99: " + latency + ".");
  for (const PhaseStats& p : r.phases) {
    if (!p.rps && !p.rps_unavailable.empty()) {
      s.notes.push_back("- " + fmt_phase(p.name, p.users) + ": no req/s: " + p.rps_unavailable +
                        ".");
    }
    if (p.host.sample_gap_seconds && *p.host.sample_gap_seconds > 0) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.1f s", *p.host.sample_gap_seconds);
      s.notes.push_back("- " + fmt_phase(p.name, p.users) + ": loadwatch took no sample for " +
                        buf +
                        " (it, or its host or VM, was stopped): its figures have a hole there, "
                        "and a pause of the system under test shows in its latency.");
    }
  }
}

std::string stable_window_line(const CapacityReport& r) {
  for (const PhaseStats& p : r.phases) {
    if (!p.warmup_rule.empty())
      return "Stable window: warm-up dropped by the rule \"" + p.warmup_rule + "\".";
  }
  return "Figures as given by the input (no warm-up dropped).";
}

Section knee_section(const CapacityReport& r) {
  Section s;
  s.title = "Knee";
  char buf[160];
  std::snprintf(buf, sizeof buf, "Kneedle on throughput against users, sensitivity S = %g, %s.",
                r.knee.options.sensitivity, r.knee.options.online ? "online" : "offline");
  s.lines.push_back(buf);
  if (r.knee.phase) {
    s.lines.push_back("- Throughput knee: " + phase_text(*r.knee.phase) + ", " +
                      fmt_opt(r.knee.rps, fmt_rps) + " req/s.");
  } else {
    s.lines.push_back("- Throughput knee: " + r.knee.reason + ".");
  }
  for (const std::string& left : r.left_out_of_scaling) {
    s.lines.push_back("- Left out (also of the USL fit): " + left + ".");
  }
  if (r.latency_knee.phase) {
    std::snprintf(buf, sizeof buf, " (more than %.0f %% above the trend of the lower loads).",
                  kLatencyKneeRise * 100);
    s.lines.push_back("- Latency knee: " + phase_text(*r.latency_knee.phase) + ", p95 " +
                      fmt_opt(r.latency_knee.p95_seconds, fmt_ms) + " where the trend gives " +
                      fmt_opt(r.latency_knee.expected_p95_seconds, fmt_ms) + buf);
  } else {
    s.lines.push_back("- Latency knee: " + r.latency_knee.reason + ".");
  }
  return s;
}

Section usl_section(const CapacityReport& r) {
  Section s;
  s.title = "Universal Scalability Law";
  s.lines.push_back(
      "X(N) = γN / (1 + α(N−1) + βN(N−1)), least squares with α, β in [0, 1], γ ≥ 0.");
  const UslFit& u = r.usl;
  if (!r.left_out_of_scaling.empty()) {
    s.lines.push_back("- Fitted without the " + std::to_string(r.left_out_of_scaling.size()) +
                      " phase(s) that have no req/s (see Knee).");
  }
  if (!u.fitted) {
    s.lines.push_back("- No fit: " + u.reason + ".");
    return s;
  }
  // A parameter the fit pressed against its zero bound prints as 0, not 2e-19.
  auto param = [](double v) { return v <= kUslNegligible ? std::string("0") : fmt_number(v); };
  s.lines.push_back("- α (contention) = " + param(u.params.alpha) + ", β (coherency) = " +
                    param(u.params.beta) + ", γ = " + fmt_number(u.params.gamma) +
                    " req/s per user, R² = " + fmt_number(u.r_squared, 3) + ".");
  if (u.peak_users) {
    s.lines.push_back(
        "- Peak at N* = √((1−α)/β) = " + fmt_number(*u.peak_users, 4) +
        " users, predicted throughput X(N*) = " + fmt_opt(u.peak_throughput, fmt_rps) + " req/s.");
  } else if (u.peak_throughput) {
    s.lines.push_back("- No peak (β = 0): throughput levels off towards γ/α = " +
                      fmt_rps(*u.peak_throughput) + " req/s.");
  } else {
    s.lines.push_back("- No peak (α = β = 0): throughput scales linearly over the range measured.");
  }
  return s;
}

Section bottleneck_section(const CapacityReport& r) {
  Section s;
  s.title = "Bottleneck";
  const BottleneckFinding& b = r.bottleneck;
  std::string where = b.phase ? " at the " + b.basis + " (" + phase_text(*b.phase) + ")" : "";
  s.lines.push_back("What saturated first" + where + ": " + b.result.summary + ".");
  for (std::size_t i = 0; i < b.result.findings.size(); ++i) {
    const Finding& f = b.result.findings[i];
    s.lines.push_back("- " + std::string(check_name(f.check)) + " (" + f.subject +
                      "): " + f.evidence + (i == 0 ? " <- first in the order" : ""));
  }
  return s;
}

}  // namespace

Document capacity_document(const CapacityReport& r) {
  Document doc;
  doc.title = "Capacity report";
  if (r.run) {
    std::string line = "Run: " + (r.run->name.empty() ? r.run->id : r.run->name);
    if (!r.run->id.empty() && !r.run->name.empty()) line += " (" + r.run->id + ")";
    if (!r.run->status.empty()) line += ", " + r.run->status;
    doc.lines.push_back(line + ".");
    if (!r.run->hosts.empty()) {
      std::string hosts;
      for (const std::string& h : r.run->hosts) hosts += (hosts.empty() ? "" : ", ") + h;
      doc.lines.push_back("One run across " + std::to_string(r.run->hosts.size()) +
                          " hosts: " + hosts + ".");
    }
  }
  if (!r.input.empty()) doc.lines.push_back("Input: " + r.input + ".");

  Section phases;
  phases.title = "Phases";
  phases.lines.push_back(stable_window_line(r));
  measurement_lines(r, phases);
  phases.tables.push_back(phase_table(r));
  Table targets = target_table(r);
  if (!targets.rows.empty()) phases.tables.push_back(std::move(targets));
  for (Table host : {host_cpu_table(r), host_system_table(r)}) {
    if (!host.rows.empty() && host.header.size() > 1) phases.tables.push_back(std::move(host));
  }
  bool has_system_tables = phases.tables.size() > 1;
  if (has_system_tables) {
    phases.notes.push_back(
        "CPU in cores (1.00 = one core busy); busiest proc = the busiest process's share of one "
        "core; throttled = the share of the target's quota periods it was held back in; host "
        "CPU by mode over the stable window, softirq apart; busy = all but idle, iowait and "
        "steal; others = busy minus the targets; run queue = runnable tasks (mean); pressure "
        "and stall = the share of the window some or all tasks waited (PSI); swap in pages.");
  }
  doc.sections.push_back(std::move(phases));
  doc.sections.push_back(knee_section(r));
  doc.sections.push_back(usl_section(r));
  doc.sections.push_back(bottleneck_section(r));
  return doc;
}

}  // namespace loadwatch::analysis
