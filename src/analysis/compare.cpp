#include "analysis/compare.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "analysis/format_figures.h"

namespace loadwatch::analysis {

namespace {

struct MetricName {
  const char* name;
  Metric metric;
};
constexpr MetricName kMetricNames[] = {{"rps", Metric::rps},
                                       {"throughput", Metric::rps},
                                       {"qps", Metric::rps},
                                       {"p50", Metric::p50},
                                       {"p95", Metric::p95},
                                       {"p99", Metric::p99},
                                       {"error_ratio", Metric::error_ratio},
                                       {"errors", Metric::error_ratio}};

bool is_latency(Metric m) { return m == Metric::p50 || m == Metric::p95 || m == Metric::p99; }

std::string trim_number(double v) { return fmt_number(v, 6); }

}  // namespace

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::rps:
      return "rps";
    case Metric::p50:
      return "p50";
    case Metric::p95:
      return "p95";
    case Metric::p99:
      return "p99";
    case Metric::error_ratio:
      return "error_ratio";
  }
  return "?";
}

std::optional<double> metric_value(const PhaseStats& p, Metric m) {
  switch (m) {
    case Metric::rps:
      return p.rps;
    case Metric::p50:
      return p.p50_seconds;
    case Metric::p95:
      return p.p95_seconds;
    case Metric::p99:
      return p.p99_seconds;
    case Metric::error_ratio:
      return p.error_ratio;
  }
  return std::nullopt;
}

std::optional<std::pair<double, double>> metric_bound(const PhaseStats& p, Metric m) {
  auto pair = [](std::optional<double> lo,
                 std::optional<double> hi) -> std::optional<std::pair<double, double>> {
    if (!lo || !hi) return std::nullopt;
    return std::make_pair(*lo, *hi);
  };
  switch (m) {
    case Metric::rps:
      return pair(p.rps_low, p.rps_high);
    case Metric::p50:
      return pair(p.p50_low_seconds, p.p50_high_seconds);
    case Metric::p95:
      return pair(p.p95_low_seconds, p.p95_high_seconds);
    case Metric::p99:
      return pair(p.p99_low_seconds, p.p99_high_seconds);
    case Metric::error_ratio:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string format_metric(Metric m, double v) {
  if (is_latency(m)) return fmt_ms(v);
  if (m == Metric::error_ratio) return fmt_pct(v);
  return fmt_rps(v);
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok:
      return "ok";
    case Verdict::regression:
      return "REGRESSION";
    case Verdict::no_data:
      return "NO DATA";
    case Verdict::within_noise:
      return "ok (within noise)";
    case Verdict::inconclusive:
      return "INCONCLUSIVE";
  }
  return "?";
}

std::string Rule::describe() const {
  std::string sign = amount >= 0 ? "+" : "";
  std::string change_text;
  switch (change) {
    case Change::relative:
      change_text = sign + trim_number(amount) + "%";
      break;
    case Change::points:
      change_text = sign + trim_number(amount) + "pp";
      break;
    case Change::absolute:
      change_text = is_latency(metric)      ? sign + trim_number(amount * 1e3) + "ms"
                    : metric == Metric::rps ? sign + trim_number(amount) + "/s"
                                            : sign + trim_number(amount);
      break;
  }
  return std::string(metric_name(metric)) + (bound == Bound::max ? " <= " : " >= ") + "base " +
         change_text;
}

double Rule::limit(double base) const {
  switch (change) {
    case Change::relative:
      return base * (1 + amount / 100);
    case Change::points:
      return base + amount / 100;
    case Change::absolute:
      return base + amount;
  }
  return base;
}

Rule parse_rule(Bound bound, std::string_view spec) {
  Rule r;
  r.bound = bound;
  r.text = std::string(spec);
  auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    throw std::invalid_argument("\"" + r.text + "\": expected METRIC=CHANGE, e.g. p95=+20%");
  }
  std::string_view name = spec.substr(0, eq), value = spec.substr(eq + 1);
  bool known = false;
  for (const MetricName& m : kMetricNames) {
    if (name == m.name) {
      r.metric = m.metric;
      known = true;
    }
  }
  if (!known) {
    throw std::invalid_argument("\"" + r.text +
                                "\": unknown metric (rps, p50, p95, p99, error_ratio)");
  }
  bool signed_value = !value.empty() && (value.front() == '+' || value.front() == '-');
  bool negative = signed_value && value.front() == '-';
  if (signed_value) value.remove_prefix(1);
  double scale = 1;
  bool time_unit = false;
  r.change = Change::absolute;
  auto strip = [&](std::string_view suffix) {
    if (value.size() > suffix.size() && value.substr(value.size() - suffix.size()) == suffix) {
      value.remove_suffix(suffix.size());
      return true;
    }
    return false;
  };
  if (strip("%")) {
    r.change = Change::relative;
  } else if (strip("pp")) {
    if (r.metric != Metric::error_ratio) {
      throw std::invalid_argument("\"" + r.text + "\": pp (percentage points) is for error_ratio");
    }
    r.change = Change::points;
  } else if (strip("ms")) {
    scale = 1e-3, time_unit = true;
  } else if (strip("us")) {
    scale = 1e-6, time_unit = true;
  } else if (strip("/s")) {
    if (r.metric != Metric::rps) {
      throw std::invalid_argument("\"" + r.text + "\": /s (requests per second) is for rps");
    }
  } else if (strip("s")) {
    time_unit = true;
  } else if (r.metric == Metric::rps) {
    r.warning = "\"" + r.text + "\" is an absolute change in req/s; write " + std::string(name) +
                "=" + std::string(signed_value ? (negative ? "-" : "+") : "") + std::string(value) +
                "% for a percentage, or " + std::string(name) + "=" +
                std::string(signed_value ? (negative ? "-" : "+") : "") + std::string(value) +
                "/s to say it is absolute";
  } else if (r.metric == Metric::error_ratio) {
    r.warning = "\"" + r.text + "\" is an absolute change of the error ratio (1 = 100 %); " +
                "write pp (percentage points) or % to be explicit";
  } else {
    r.warning = "\"" + r.text + "\" has no unit: read as seconds; write ms, s or %";
  }
  if (time_unit && !is_latency(r.metric)) {
    throw std::invalid_argument("\"" + r.text + "\": a time unit is for p50, p95 or p99");
  }
  double amount = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), amount);
  if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(amount) ||
      value.empty()) {
    throw std::invalid_argument("\"" + r.text + "\": not a number with %, pp, ms, s or us");
  }
  if (amount < 0) throw std::invalid_argument("\"" + r.text + "\": put the sign first");
  amount *= scale;
  if (negative || (!signed_value && bound == Bound::min)) amount = -amount;
  if (r.change == Change::relative && amount <= -100) {
    throw std::invalid_argument("\"" + r.text + "\": a change of -100% or less means nothing");
  }
  r.amount = amount;
  return r;
}

std::vector<Rule> default_rules() { return {parse_rule(Bound::max, "p95=+20%")}; }

std::vector<Rule> rules_or_default(const std::vector<std::string>& max_specs,
                                   const std::vector<std::string>& min_specs) {
  std::vector<Rule> rules;
  try {
    for (const std::string& s : max_specs) rules.push_back(parse_rule(Bound::max, s));
    for (const std::string& s : min_specs) rules.push_back(parse_rule(Bound::min, s));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("bad rule ") + e.what());
  }
  return rules.empty() ? default_rules() : rules;
}

bool Comparison::regressed() const {
  for (const PhaseComparison& p : phases) {
    for (const RuleResult& r : p.results) {
      if (r.verdict == Verdict::regression) return true;
    }
  }
  return false;
}

bool Comparison::bad_input() const {
  if (!problems.empty()) return true;
  for (const PhaseComparison& p : phases) {
    if (!p.current_phase) return true;
    for (const RuleResult& r : p.results) {
      if (r.verdict == Verdict::no_data) return true;
    }
  }
  return false;
}

bool Comparison::inconclusive() const {
  for (const PhaseComparison& p : phases) {
    for (const RuleResult& r : p.results) {
      if (r.verdict == Verdict::inconclusive) return true;
    }
  }
  return false;
}

int Comparison::exit_code(bool fail_inconclusive) const {
  if (bad_input()) return 2;
  if (regressed()) return 1;
  return fail_inconclusive && inconclusive() ? 3 : 0;
}

namespace {

RuleResult judge(const Rule& rule, const PhaseStats& base, const PhaseStats& cur) {
  RuleResult r;
  r.rule = rule;
  r.base = metric_value(base, rule.metric);
  r.current = metric_value(cur, rule.metric);
  const char* name = metric_name(rule.metric);
  // A figure the report left out as too coarse was measured, just not finely enough to judge:
  // req/s, and a latency read between the same two counter changes. A latency the generator
  // never reported stays missing data.
  const PhaseStats& lacking = !r.base ? base : cur;
  const bool coarse_latency = is_latency(rule.metric) && !lacking.rps_unavailable.empty();
  const std::string& coarse = rule.metric == Metric::rps ? lacking.rps_unavailable
                              : coarse_latency           ? lacking.latency_unavailable
                                                         : std::string();
  if ((!r.base || !r.current) && !coarse.empty()) {
    r.verdict = Verdict::inconclusive;
    r.message = std::string("no ") + name + " in " +
                (!r.base && !r.current ? "either run"
                 : !r.base             ? "the baseline"
                                       : "the current run") +
                " (" + coarse + "), so the figures cannot tell";
    return r;
  }
  if (!r.base || !r.current) {
    r.verdict = Verdict::no_data;
    r.message = std::string("no ") + name + " in " +
                (!r.base && !r.current ? "either run"
                 : !r.base             ? "the baseline"
                                       : "the current run");
    return r;
  }
  // A merged histogram's quantile and a generator's rolling one cover different windows: one
  // run's figure is not a measure of the other's.
  if (is_latency(rule.metric) && !base.latency_method.empty() && !cur.latency_method.empty() &&
      base.latency_method != cur.latency_method) {
    r.verdict = Verdict::inconclusive;
    r.message = std::string(name) + " measured differently (" + base.latency_method +
                " in the baseline, " + cur.latency_method +
                " in the current run), so the figures cannot tell";
    return r;
  }
  r.limit = rule.limit(*r.base);
  // A hair of slack so a value equal to the limit after rounding in a saved file passes.
  double slack = 1e-9 * std::max(1.0, std::fabs(*r.limit));
  bool bad =
      rule.bound == Bound::max ? *r.current > *r.limit + slack : *r.current < *r.limit - slack;
  // Each figure's bound (the figure itself when the report gives none); the limit follows the
  // baseline's, so the verdict holds for any pair of true values inside the two bounds.
  auto base_bound = metric_bound(base, rule.metric).value_or(std::make_pair(*r.base, *r.base));
  auto cur_bound = metric_bound(cur, rule.metric).value_or(std::make_pair(*r.current, *r.current));
  double limit_low = rule.limit(base_bound.first), limit_high = rule.limit(base_bound.second);
  bool surely_bad = rule.bound == Bound::max ? cur_bound.first > limit_high + slack
                                             : cur_bound.second < limit_low - slack;
  bool surely_ok = rule.bound == Bound::max ? cur_bound.second <= limit_low + slack
                                            : cur_bound.first >= limit_high - slack;
  double uncertainty = (cur_bound.second - cur_bound.first) / 2 + (limit_high - limit_low) / 2;
  double margin = std::fabs(*r.limit - *r.base);
  if (uncertainty > 0) r.uncertainty = uncertainty;
  std::string change = *r.base != 0 ? " (" + fmt_change(*r.base, *r.current) + ")" : "";
  std::string figures = std::string(name) + " " + format_metric(rule.metric, *r.current) + change;
  std::string against = " the limit " + format_metric(rule.metric, *r.limit) + " (baseline " +
                        format_metric(rule.metric, *r.base) + ")";
  std::string noise = "±" + format_metric(rule.metric, uncertainty);
  if (surely_bad) {
    r.verdict = Verdict::regression;
    r.message = figures + (rule.bound == Bound::max ? " above" : " below") + against +
                (uncertainty > 0 ? ", beyond the combined uncertainty " + noise : "");
  } else if (surely_ok || (!bad && uncertainty <= margin)) {
    r.verdict = Verdict::ok;
    r.message = figures + " within" + against;
  } else if (uncertainty > margin) {
    r.verdict = Verdict::inconclusive;
    r.message = figures + ", " + (bad ? "past" : "within") + against +
                ": the combined uncertainty " + noise + " is larger than the rule's margin " +
                format_metric(rule.metric, margin) + ", so the figures cannot tell";
  } else {
    r.verdict = Verdict::within_noise;
    r.message = figures + (rule.bound == Bound::max ? " above" : " below") + against +
                " by less than the combined uncertainty " + noise;
  }
  return r;
}

}  // namespace

Comparison compare_reports(const CapacityReport& base, const CapacityReport& current,
                           const std::vector<Rule>& rules) {
  Comparison c;
  if (base.phases.empty()) c.problems.push_back("the baseline has no phases");
  if (current.phases.empty()) c.problems.push_back("the current run has no phases");
  std::vector<bool> used(current.phases.size(), false);
  auto take = [&](auto&& matches) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < current.phases.size(); ++i) {
      if (!used[i] && matches(current.phases[i])) {
        used[i] = true;
        return i;
      }
    }
    return std::nullopt;
  };
  auto idle = [](const PhaseStats& p) { return p.users && *p.users == 0; };
  auto note_idle = [&](const std::string& name) {
    if (std::find(c.idle_phases.begin(), c.idle_phases.end(), name) == c.idle_phases.end())
      c.idle_phases.push_back(name);
  };
  for (std::size_t i = 0; i < current.phases.size(); ++i) {
    if (idle(current.phases[i])) used[i] = true;
  }
  bool judged_any = false;
  for (const PhaseStats& b : base.phases) {
    if (idle(b)) {
      note_idle(b.name);
      continue;
    }
    judged_any = true;
    PhaseComparison pc;
    pc.base_phase = b.name;
    pc.users = b.users;
    std::optional<std::size_t> match;
    if (b.users) {
      match = take([&](const PhaseStats& p) { return p.users == b.users; });
      if (match) pc.matched_by = "users";
    }
    if (!match) {
      match = take([&](const PhaseStats& p) { return p.name == b.name; });
      if (match) pc.matched_by = "name";
    }
    if (match) {
      const PhaseStats& cur = current.phases[*match];
      pc.current_phase = cur.name;
      for (const Rule& rule : rules) pc.results.push_back(judge(rule, b, cur));
    }
    c.phases.push_back(std::move(pc));
  }
  for (std::size_t i = 0; i < current.phases.size(); ++i) {
    if (idle(current.phases[i]))
      note_idle(current.phases[i].name);
    else if (!used[i])
      c.unmatched_current.push_back(current.phases[i].name);
  }
  if (!base.phases.empty() && !judged_any) {
    c.problems.push_back("every baseline phase is at 0 users");
  }
  return c;
}

}  // namespace loadwatch::analysis
