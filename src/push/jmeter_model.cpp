// JMeter Backend Listener wire formats, read from JMeter's sources:
// - GraphiteBackendListenerClient (2.13+): `<prefix><ctx>.<ok|ko|a>.<count|min|max|pctN>` and
//   `<prefix>test.<minAT|maxAT|meanAT|startedT|endedT>`; ctx "all" is the aggregate. Counts are
//   per send interval (SamplerMetric.resetForTimeInterval), so they are added up here; 3.x+
//   adds `h.count` (hits) and `<ok|ko|a>.avg`. Percentile suffixes are DecimalFormat("0.##")
//   output sanitised with '.' → '_' ("pct99_9").
// - InfluxdbBackendListenerClient (3.2+): measurement (default "jmeter") with tags
//   application, transaction ("all" aggregate, "internal" threads), statut ("all|ok|ko", French
//   and kept for compatibility) and fields count, countError (aggregate), avg, min, max, hit,
//   sb, rb, pct<float> ("pct90.0"); extra points tagged responseCode/responseMessage break
//   errors down (ignored: they repeat the ko counts). Measurement "events" carries the run
//   annotations: text="<title> started" / "<title> ended".
// Times are milliseconds; they are exported in seconds.
#include "push/jmeter_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "push/push_families.h"
#include "sources/generator_families.h"

namespace loadwatch {

namespace {

constexpr double kMs = 1e-3;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool split_jmeter_graphite_path(std::string_view path, JMeterGraphitePath& out) {
  auto last_dot = path.rfind('.');
  if (last_dot == std::string_view::npos || last_dot == 0) return false;
  auto last = path.substr(last_dot + 1);
  auto head = path.substr(0, last_dot);
  auto split_context = [&](std::string_view before, std::string_view metric) {
    auto dot = before.rfind('.');
    out.context = dot == std::string_view::npos ? before : before.substr(dot + 1);
    out.prefix = dot == std::string_view::npos ? std::string_view() : before.substr(0, dot);
    out.metric = metric;
    return !out.context.empty() && !last.empty();
  };
  if (last == "minAT" || last == "maxAT" || last == "meanAT" || last == "startedT" ||
      last == "endedT") {
    return split_context(head, last) && out.context == "test";
  }
  auto kind_dot = head.rfind('.');
  if (kind_dot == std::string_view::npos) return false;
  auto kind = head.substr(kind_dot + 1);
  if (kind != "ok" && kind != "ko" && kind != "a" && kind != "h") return false;
  return split_context(head.substr(0, kind_dot), path.substr(kind_dot + 1));
}

std::string percentile_to_quantile(std::string_view pct) {
  // Digits with at most one decimal separator: '.', '_' (JMeter's sanitised '.') or ','
  // (DecimalFormat in a comma locale).
  auto sep = pct.find_first_of("._,");
  auto int_part = pct.substr(0, sep);
  auto frac_part = sep == std::string_view::npos ? std::string_view() : pct.substr(sep + 1);
  auto all_digits = [](std::string_view s) {
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if ((int_part.empty() && frac_part.empty()) || !all_digits(int_part) || !all_digits(frac_part)) {
    return "";
  }
  while (!int_part.empty() && int_part.front() == '0') int_part.remove_prefix(1);
  while (!frac_part.empty() && frac_part.back() == '0') frac_part.remove_suffix(1);
  if (int_part.size() > 3) return "";
  if (int_part.size() == 3) {
    return int_part == "100" && frac_part.empty() ? std::string("1") : std::string();
  }
  // N / 100: move the decimal point two places left.
  std::string digits(2 - int_part.size(), '0');
  digits.append(int_part);
  digits.append(frac_part);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  if (digits.empty()) return std::string("0");
  return "0." + digits;
}

bool JMeterModel::Stats::set_quantile(std::string_view key, double seconds, bool room) {
  for (auto& q : quantiles) {
    if (q.key == key) {
      q.seconds = seconds;
      return true;
    }
  }
  std::string label = percentile_to_quantile(key);
  double quantile = 0;
  if (label.empty() ||
      std::from_chars(label.data(), label.data() + label.size(), quantile).ec != std::errc()) {
    return true;  // not a percentile: ignored, not refused
  }
  for (auto& q : quantiles) {
    if (q.quantile == quantile) {  // same quantile spelled differently ("90" and "90.0")
      q.key = std::string(key);
      q.seconds = seconds;
      return true;
    }
  }
  if (!room) return false;
  quantiles.push_back({std::string(key), quantile, seconds});
  return true;
}

void JMeterModel::Stats::add_interval(double count, double avg_ms) {
  if (!(avg_ms >= 0) || avg_ms > 1e12) {
    sum_broken = true;
    return;
  }
  sum_seconds += count * avg_ms * kMs;
  sum_seen = true;
}

JMeterModel::JMeterModel(std::string protocol) : JMeterModel(std::move(protocol), Limits{}) {}

JMeterModel::JMeterModel(std::string protocol, Limits limits)
    : protocol_(std::move(protocol)), limits_(limits) {}

std::size_t JMeterModel::forget_quiet(double now) {
  std::lock_guard lock(mutex_);
  std::size_t forgotten = 0;
  for (auto it = sources_.begin(); it != sources_.end();) {
    if (it->second.last_push > now - limits_.evict_after_s) {
      ++it;
      continue;
    }
    series_ -= it->second.series;
    it = sources_.erase(it);
    ++forgotten;
  }
  return forgotten;
}

JMeterModel::Source* JMeterModel::source_locked(std::string_view name, double now,
                                                const char*& why) {
  if (auto it = sources_.find(name); it != sources_.end()) return &it->second;
  if (name.size() > limits_.max_name_bytes) {
    why = "label_limit";
    return nullptr;
  }
  if (sources_.size() >= limits_.max_sources) {
    // Full: make room by forgetting the source that pushed least recently, if it has been
    // quiet for a while (CI runs that each push to a new database); else refuse the newcomer.
    auto oldest = sources_.begin();
    for (auto it = sources_.begin(); it != sources_.end(); ++it) {
      if (it->second.last_push < oldest->second.last_push) oldest = it;
    }
    if (oldest == sources_.end() || oldest->second.last_push > now - limits_.evict_after_s) {
      why = "max_sources";
      return nullptr;
    }
    series_ -= oldest->second.series;
    sources_.erase(oldest);
  }
  if (series_ + kSourceSeries > limits_.max_series) {
    why = "max_series";
    return nullptr;
  }
  series_ += kSourceSeries;
  return &sources_.emplace(std::string(name), Source{}).first->second;
}

JMeterModel::Stats* JMeterModel::endpoint_locked(Source& s, std::string_view name,
                                                 const char*& why) {
  if (auto it = s.endpoints.find(name); it != s.endpoints.end()) return &it->second;
  if (name.size() > limits_.max_name_bytes) {
    why = "label_limit";
    return nullptr;
  }
  if (s.endpoints.size() >= limits_.max_transactions) {
    why = "max_transactions";
    return nullptr;
  }
  if (s.series + kEndpointSeries > limits_.max_series_per_source ||
      series_ + kEndpointSeries > limits_.max_series) {
    why = "max_series";
    return nullptr;
  }
  s.series += kEndpointSeries;
  series_ += kEndpointSeries;
  return &s.endpoints.emplace(std::string(name), Stats{}).first->second;
}

bool JMeterModel::quantile_locked(Source& s, Stats& st, std::string_view key, double seconds,
                                  const char*& why) {
  bool per_series = st.quantiles.size() < limits_.max_quantiles;
  bool series_room =
      s.series + 1 <= limits_.max_series_per_source && series_ + 1 <= limits_.max_series;
  std::size_t before = st.quantiles.size();
  if (!st.set_quantile(key, seconds, per_series && series_room)) {
    why = per_series ? "max_series" : "max_quantiles";
    return false;
  }
  if (st.quantiles.size() > before) {
    s.series += 1;
    series_ += 1;
  }
  return true;
}

void JMeterModel::reject_locked(const char* reason, std::uint64_t n) {
  auto it = rejected_.find(std::string_view(reason));
  if (it == rejected_.end()) it = rejected_.emplace(reason, 0).first;
  it->second += n;
}

void JMeterModel::count_rejected(const char* reason, std::uint64_t n) {
  std::lock_guard lock(mutex_);
  lines_ += n;
  reject_locked(reason, n);
}

JMeterModel::Result JMeterModel::ingest_graphite(const GraphiteLine& line, double now) {
  std::unique_lock lock(mutex_);
  ++lines_;
  JMeterGraphitePath p;
  if (!split_jmeter_graphite_path(line.path, p)) {
    reject_locked("unknown", 1);
    return Result::Unknown;
  }
  std::string_view kind, stat;
  if (p.context != "test") {
    auto dot = p.metric.find('.');
    kind = p.metric.substr(0, dot);
    stat = p.metric.substr(dot + 1);
    bool known = stat == "count" || stat == "min" || stat == "max" || stat == "avg" ||
                 stat.substr(0, 3) == "pct";
    if (!known) {
      reject_locked("unknown", 1);
      return Result::Unknown;
    }
  }
  // An empty rootMetricsPrefix leaves no name: call the source "jmeter" (JMeter's default).
  const char* why = nullptr;
  Source* s = source_locked(p.prefix.empty() ? std::string_view("jmeter") : p.prefix, now, why);
  if (!s) {
    reject_locked(why, 1);
    return Result::Dropped;
  }
  double v = line.value;
  if (p.context == "test") {
    if (p.metric == "startedT") s->started_threads = v;
    if (p.metric == "endedT") s->ended_threads = v;
    if (p.metric == "meanAT") s->mean_threads = v;
    s->last_push = now;
    if (runs_ && (p.metric == "startedT" || p.metric == "endedT") && s->started_threads >= 0 &&
        s->ended_threads >= 0) {
      GeneratorSighting seen;
      seen.origin = "jmeter:" + std::string(p.prefix.empty() ? "jmeter" : p.prefix);
      seen.activity = s->started_threads > s->ended_threads ? GeneratorActivity::Steady
                                                            : GeneratorActivity::Idle;
      seen.at = now;
      lock.unlock();
      runs_->generator_seen(seen);
    }
    return Result::Taken;
  }
  Stats* st = p.context == "all" ? &s->all : endpoint_locked(*s, p.context, why);
  if (!st) {
    reject_locked(why, 1);
    return Result::Dropped;
  }
  s->last_push = now;
  if (stat == "count") {
    // Per-interval counts: negative or non-finite values would break the counter.
    if (!(v >= 0) || v > 1e15) return Result::Taken;
    if (kind == "ko") st->failures += v;
    if (kind != "a") return Result::Taken;
    st->requests += v;
    // The aggregate's count line is stamped with the moment JMeter closed the interval, in
    // whole seconds.
    if (p.context == "all") {
      s->data_time = line.timestamp >= 0 ? line.timestamp : -1;
      s->data_time_uncertainty = 1;
    }
    // The previous interval's count never met its mean: the sum can no longer be known.
    if (!st->g_count_paired) st->sum_broken = true;
    st->g_count = v;
    st->g_count_ts = line.timestamp;
    st->g_count_paired = false;
    if (st->g_avg_ts == line.timestamp) {
      st->add_interval(v, st->g_avg_ms);
      st->g_count_paired = true;
    }
    return Result::Taken;
  }
  if (kind != "a") return Result::Taken;  // ok/ko latency splits are not exported
  if (stat == "min") st->min = v * kMs;
  if (stat == "max") st->max = v * kMs;
  if (stat == "avg") {
    st->avg = v * kMs;
    st->g_avg_ms = v;
    st->g_avg_ts = line.timestamp;
    if (!st->g_count_paired && st->g_count_ts == line.timestamp) {
      st->add_interval(st->g_count, v);
      st->g_count_paired = true;
    }
  }
  if (stat.substr(0, 3) == "pct" && !quantile_locked(*s, *st, stat.substr(3), v * kMs, why)) {
    reject_locked(why, 1);
    return Result::Dropped;
  }
  return Result::Taken;
}

void JMeterModel::apply_influx_locked(Source& s, const InfluxPoint& p, double now,
                                      std::int64_t ns_per_unit, bool& taken, const char*& dropped) {
  if (p.measurement == "events") {
    const InfluxField* text = p.field("text");
    if (!text || text->type != InfluxField::Type::String) return;
    double ts = p.timestamp
                    ? static_cast<double>(*p.timestamp) * static_cast<double>(ns_per_unit) / 1e9
                    : now;
    if (ends_with(text->text, " started") || text->text == "started") {
      s.run_start = ts;
      s.run_end = -1;  // a new run has not ended yet
      s.run_title = text->text.substr(0, text->text.size() - std::string_view("started").size());
      while (!s.run_title.empty() && s.run_title.back() == ' ') s.run_title.pop_back();
    } else if (ends_with(text->text, " ended") || text->text == "ended") {
      s.run_end = ts;
    } else {
      return;
    }
    taken = true;
    return;
  }
  auto transaction = p.tag("transaction");
  if (!transaction) return;
  if (*transaction == "internal") {
    for (const auto& f : p.fields) {
      if (f.type == InfluxField::Type::String) continue;
      if (f.key == "startedT") s.started_threads = f.number;
      if (f.key == "endedT") s.ended_threads = f.number;
      if (f.key == "meanAT") s.mean_threads = f.number;
    }
    taken = true;
    return;
  }
  // Error breakdown points (responseCode/responseMessage tags) repeat the ko counts.
  if (p.tag("responseCode")) {
    taken = true;
    return;
  }
  auto statut = p.tag("statut").value_or("all");
  if (statut == "ok") {
    taken = true;
    return;
  }
  bool aggregate = *transaction == "all";
  Stats* st = aggregate ? &s.all : endpoint_locked(s, *transaction, dropped);
  if (!st) return;
  taken = true;
  if (statut == "all") {
    // count and avg come in the same point. The aggregate's avg is JMeter's mean of the OK
    // samples only (InfluxdbBackendListenerClient.addCumulatedMetrics), so it describes all
    // requests only when none failed; collect() prefers the endpoints' sums when they cover
    // every request.
    const InfluxField* count = p.field("count");
    const InfluxField* avg = p.field("avg");
    if (aggregate && count) {
      // The counts are as of the point's timestamp (JMeter stamps the moment it sends, in ms);
      // a point without one gets the server's arrival time in InfluxDB, which is no
      // generator time: the age is then unknown.
      double unit = static_cast<double>(ns_per_unit) / 1e9;
      s.data_time = p.timestamp ? static_cast<double>(*p.timestamp) * unit : -1;
      s.data_time_uncertainty = std::max(unit, 1e-3);
    }
    const InfluxField* errors = aggregate ? p.field("countError") : nullptr;
    if (count && count->type != InfluxField::Type::String && count->number > 0) {
      if (!avg || avg->type == InfluxField::Type::String ||
          (errors && errors->type != InfluxField::Type::String && errors->number > 0)) {
        st->sum_broken = true;
      } else {
        st->add_interval(count->number, avg->number);
      }
    }
  }
  for (const auto& f : p.fields) {
    if (f.type == InfluxField::Type::String || f.type == InfluxField::Type::Boolean) continue;
    double v = f.number;
    bool count_ok = v >= 0 && v <= 1e15;
    if (statut == "ko") {
      if (f.key == "count" && count_ok && !aggregate) st->failures += v;
      continue;
    }
    if (statut != "all") continue;
    if (f.key == "count") {
      if (count_ok) st->requests += v;
    } else if (f.key == "countError") {
      if (count_ok) st->failures += v;
    } else if (f.key == "avg") {
      st->avg = v * kMs;
    } else if (f.key == "min") {
      st->min = v * kMs;
    } else if (f.key == "max") {
      st->max = v * kMs;
    } else if (f.key.substr(0, 3) == "pct") {
      // Past the caps the rest of the point is still taken; the line counts as not fully
      // used. Each field costs at most kMaxQuantilesPerSeries compares: 128,000 pctN
      // fields stay linear.
      const char* why = nullptr;
      if (!quantile_locked(s, *st, f.key.substr(3), v * kMs, why)) dropped = why;
    } else if (aggregate && (f.key == "sb" || f.key == "rb") && count_ok) {
      (f.key == "sb" ? s.sent_bytes : s.received_bytes) += v;
      s.seen_bytes = true;
    }
  }
}

JMeterModel::InfluxOutcome JMeterModel::ingest_influx(std::string_view source,
                                                      std::string_view body, double now,
                                                      std::int64_t ns_per_unit) {
  InfluxOutcome out;
  std::unique_lock lock(mutex_);
  bool existed = sources_.find(source) != sources_.end();
  const char* refused = nullptr;
  Source* s = source_locked(source, now, refused);
  const double start_before = s ? s->run_start : -1, end_before = s ? s->run_end : -1;
  std::uint64_t unknown = 0;
  std::map<std::string_view, std::uint64_t> dropped_by;  // reason -> lines
  parse_influx_lines(
      body,
      [&](const InfluxPoint& p) {
        ++out.points;
        if (!s) {
          ++dropped_by[refused];
          return;
        }
        bool taken = false;
        const char* dropped = nullptr;
        apply_influx_locked(*s, p, now, ns_per_unit, taken, dropped);
        if (taken) ++out.taken;
        if (dropped) {
          ++dropped_by[dropped];
        } else if (!taken) {
          ++unknown;
        }
      },
      [&](const InfluxParseError& e) {
        ++out.malformed;
        if (out.errors.size() < kMaxReportedErrors) out.errors.push_back(e);
      });
  lines_ += out.points + out.malformed;
  if (out.malformed) reject_locked("parse", out.malformed);
  if (unknown) reject_locked("unknown", unknown);
  for (const auto& [reason, n] : dropped_by) reject_locked(reason.data(), n);
  if (!s) {
    out.refused = refused;
    if (std::string_view(refused) == "max_sources") {
      double quiet = now;
      for (const auto& [_, src] : sources_) quiet = std::min(quiet, src.last_push);
      out.retry_after_s = std::max(1.0, quiet + limits_.evict_after_s - now);
    }
    return out;
  }
  if (out.taken) s->last_push = now;
  // A body with nothing JMeter-shaped in it does not create a source.
  if (!existed && !out.taken) {
    auto it = sources_.find(source);
    series_ -= it->second.series;
    sources_.erase(it);
    return out;
  }
  if (!runs_ || !out.taken) return out;
  const double start = s->run_start, end = s->run_end;
  const std::string title = s->run_title;
  lock.unlock();
  const std::string origin = "jmeter:" + std::string(source);
  if (start >= 0 && start != start_before) runs_->generator_run_started(origin, title, start);
  if (end >= 0 && end != end_before) runs_->generator_run_ended(origin, end);
  GeneratorSighting alive;  // keeps an annotated run open while JMeter keeps pushing
  alive.origin = origin;
  alive.activity = GeneratorActivity::Unknown;
  alive.at = now;
  alive.stale_after = 60;
  runs_->generator_seen(alive);
  return out;
}

void JMeterModel::collect(MetricSink& out, double now) const {
  using F = GeneratorFamily;
  auto summary = [&out](GeneratorFamily family, const Labels& labels, const Stats& st, double sum) {
    auto& m = add_generator_summary(out, family, labels, st.requests, sum);
    for (const auto& q : st.quantiles) m.summary.quantile.push_back({q.quantile, q.seconds});
  };
  std::lock_guard lock(mutex_);
  for (const auto& [name, s] : sources_) {
    const Labels src{{"source", name}};
    add_generator_sample(out, F::kRequests, src, s.all.requests);
    add_generator_sample(out, F::kFailures, src, s.all.failures);
    // Prefer the endpoints' sums when they cover every request: exact even where JMeter's
    // aggregate mean is the OK-only one.
    double all_sum = s.all.sum_known() ? s.all.sum_seconds : std::nan("");
    if (!s.endpoints.empty()) {
      double n = 0, sum = 0;
      bool known = true;
      for (const auto& [_, e] : s.endpoints) {
        n += e.requests;
        sum += e.sum_seconds;
        known = known && (e.sum_known() || e.requests == 0);
      }
      if (known && n == s.all.requests) all_sum = sum;
    }
    summary(F::kLatency, src, s.all, all_sum);
    if (s.all.min >= 0) add_generator_sample(out, F::kLatencyMin, src, s.all.min);
    if (s.all.max >= 0) add_generator_sample(out, F::kLatencyMax, src, s.all.max);
    if (s.all.avg >= 0) add_generator_sample(out, F::kLatencyAvg, src, s.all.avg);
    // JMeter's startedT/endedT are totals since the run began, so their difference is the
    // number of threads running now; meanAT (mean over the interval) is the fallback.
    double users = s.started_threads >= 0 && s.ended_threads >= 0
                       ? s.started_threads - s.ended_threads
                       : s.mean_threads;
    if (users >= 0) add_generator_sample(out, F::kUsers, src, users);
    if (s.seen_bytes) {
      add_generator_sample(out, F::kSentBytes, src, s.sent_bytes);
      add_generator_sample(out, F::kReceivedBytes, src, s.received_bytes);
    }
    if (s.run_start >= 0) add_generator_sample(out, F::kRunStart, src, s.run_start);
    if (s.run_end >= 0) add_generator_sample(out, F::kRunEnd, src, s.run_end);
    if (s.data_time >= 0) {
      add_generator_sample(out, F::kDataAge, src, now - s.data_time);
      add_generator_sample(out, F::kDataAgeUncertainty, src, s.data_time_uncertainty);
    }
    for (const auto& [endpoint, e] : s.endpoints) {
      const Labels ep{{"source", name}, {"name", endpoint}, {"method", ""}};
      add_generator_sample(out, F::kEndpointRequests, ep, e.requests);
      add_generator_sample(out, F::kEndpointFailures, ep, e.failures);
      summary(F::kEndpointLatency, ep, e, e.sum_known() ? e.sum_seconds : std::nan(""));
      if (e.min >= 0) add_generator_sample(out, F::kEndpointLatencyMin, ep, e.min);
      if (e.max >= 0) add_generator_sample(out, F::kEndpointLatencyMax, ep, e.max);
      if (e.avg >= 0) add_generator_sample(out, F::kEndpointLatencyAvg, ep, e.avg);
    }
    out.gauge("loadwatch_push_last_timestamp_seconds", kPushLastHelp,
              {{"protocol", protocol_}, {"source", name}}, s.last_push);
  }
  out.counter("loadwatch_push_lines_total", kPushLinesHelp, {{"protocol", protocol_}},
              static_cast<double>(lines_));
  for (const auto& [reason, n] : rejected_) {
    out.counter("loadwatch_push_rejected_lines_total", kPushRejectedHelp,
                {{"protocol", protocol_}, {"reason", reason}}, static_cast<double>(n));
  }
}

}  // namespace loadwatch
