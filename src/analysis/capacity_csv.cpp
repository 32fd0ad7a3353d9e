#include "analysis/capacity_csv.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

namespace loadwatch::analysis {

namespace {

enum class Role { ignore, users, rps, p50, p95, p99, error_ratio, error_pct, success_pct };

struct Column {
  Role role = Role::ignore;
  double to_seconds = 1e-3;  // latency columns: the unit of a bare number
  std::string name;
};

std::string normalise(std::string_view raw) {
  std::string out;
  for (char c : raw) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (c == '%') {
      out += "_pct";
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

/// "p95_ms" -> {"p95", 1e-3}; a bare latency name is in milliseconds.
std::pair<std::string, double> split_unit(const std::string& name) {
  static const std::pair<const char*, double> units[] = {
      {"_ms", 1e-3},   {"_msec", 1e-3}, {"_millis", 1e-3}, {"_us", 1e-6},
      {"_usec", 1e-6}, {"_s", 1.0},     {"_sec", 1.0},     {"_seconds", 1.0}};
  for (const auto& [suffix, factor] : units) {
    std::string_view sv(name), suf(suffix);
    if (sv.size() > suf.size() && sv.substr(sv.size() - suf.size()) == suf) {
      return {std::string(sv.substr(0, sv.size() - suf.size())), factor};
    }
  }
  return {name, 1e-3};
}

std::optional<Column> column_for(std::string_view raw) {
  Column c;
  c.name = std::string(raw);
  std::string n = normalise(raw);
  if (one_of(n, {"users", "concurrency", "connections", "conns", "threads", "vus", "clients",
                 "processes", "replicas", "workers", "c", "n"})) {
    c.role = Role::users;
  } else if (one_of(n, {"rps", "qps", "tps", "throughput", "x", "req_s", "requests_sec",
                        "requests_per_second", "requests_s"})) {
    c.role = Role::rps;
  } else if (one_of(n, {"errors", "error_ratio", "error_rate", "failure_ratio"})) {
    c.role = Role::error_ratio;
  } else if (one_of(n, {"error_pct", "errors_pct", "error_percent", "error_rate_pct",
                        "failures_pct"})) {
    c.role = Role::error_pct;
  } else if (one_of(n, {"success_pct", "success_rate", "success_rate_pct", "success_percent",
                        "success"})) {
    c.role = Role::success_pct;
  } else {
    auto [base, factor] = split_unit(n);
    c.to_seconds = factor;
    if (one_of(base, {"p50", "median"})) {
      c.role = Role::p50;
    } else if (one_of(base, {"p99"})) {
      c.role = Role::p99;
    } else if (one_of(base, {"p95", "latency", "avg_latency", "mean_latency", "avg", "mean", "ttlb",
                             "rt", "response_time", "latency_avg"})) {
      c.role = Role::p95;
    } else {
      return std::nullopt;
    }
  }
  return c;
}

std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  auto trim = [](std::string_view f) {
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.remove_suffix(1);
    if (f.size() >= 2 && f.front() == '"' && f.back() == '"') f = f.substr(1, f.size() - 2);
    return f;
  };
  if (sep == ' ') {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (j > i) out.push_back(trim(line.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  std::size_t start = 0;
  for (;;) {
    std::size_t end = line.find(sep, start);
    out.push_back(trim(line.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

char separator_of(std::string_view line) {
  for (char c : {',', ';', '\t'}) {
    if (line.find(c) != std::string_view::npos) return c;
  }
  return ' ';
}

std::optional<double> parse_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// A latency cell: a bare number in the column's unit, or with its own (wrk prints "50.78ms").
std::optional<double> parse_latency(std::string_view s, double column_unit) {
  static const std::pair<const char*, double> units[] = {{"ms", 1e-3}, {"us", 1e-6}, {"s", 1.0}};
  for (const auto& [suffix, factor] : units) {
    std::string_view suf(suffix);
    if (s.size() > suf.size() && s.substr(s.size() - suf.size()) == suf) {
      auto v = parse_number(s.substr(0, s.size() - suf.size()));
      if (v) return *v * factor;
    }
  }
  auto v = parse_number(s);
  if (v) return *v * column_unit;
  return std::nullopt;
}

bool looks_like_header(const std::vector<std::string_view>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](std::string_view f) {
    return !f.empty() && !parse_number(f) && !parse_latency(f, 1) &&
           !(f.back() == '%' && parse_number(f.substr(0, f.size() - 1)));
  });
}

std::vector<Column> columns_from(const std::vector<std::string>& names, const std::string& where) {
  std::vector<Column> cols;
  for (const std::string& name : names) {
    auto c = column_for(name);
    if (!c) {
      // A named column we do not know is skipped, so extra columns (p75, p90) do no harm; the
      // required ones are checked below.
      Column skip;
      skip.name = name;
      cols.push_back(skip);
      continue;
    }
    if (c->role != Role::ignore) {
      for (const Column& other : cols) {
        if (other.role == c->role) {
          throw CsvError(where + ": columns \"" + other.name + "\" and \"" + name +
                         "\" mean the same thing");
        }
      }
    }
    cols.push_back(*c);
  }
  auto has = [&](Role r) {
    return std::any_of(cols.begin(), cols.end(), [&](const Column& c) { return c.role == r; });
  };
  if (!has(Role::users))
    throw CsvError(where + ": no concurrency column (users, concurrency, ...)");
  if (!has(Role::rps)) throw CsvError(where + ": no throughput column (rps, qps, throughput, ...)");
  return cols;
}

void store(PhaseStats& p, const Column& c, std::string_view cell, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return CsvError(where + ", column \"" + c.name + "\": " + why + ": \"" + std::string(cell) +
                    "\"");
  };
  std::string_view number = cell;
  if (!number.empty() && number.back() == '%') number.remove_suffix(1);
  switch (c.role) {
    case Role::ignore:
      return;
    case Role::users: {
      auto v = parse_number(cell);
      if (!v || *v < 0 || std::floor(*v) != *v || *v > 1e12) {
        throw bad("concurrency must be a whole number >= 0");
      }
      p.users = static_cast<std::int64_t>(*v);
      return;
    }
    case Role::rps: {
      auto v = parse_number(cell);
      if (!v || *v < 0) throw bad("throughput must be a number >= 0");
      p.rps = *v;
      return;
    }
    case Role::p50:
    case Role::p95:
    case Role::p99: {
      auto v = parse_latency(cell, c.to_seconds);
      if (!v || *v < 0) throw bad("latency must be a number >= 0 (ms unless the name says)");
      (c.role == Role::p50   ? p.p50_seconds
       : c.role == Role::p99 ? p.p99_seconds
                             : p.p95_seconds) = *v;
      return;
    }
    case Role::error_ratio: {
      auto v = parse_number(cell);
      if (!v || *v < 0 || *v > 1) {
        throw bad("an error ratio is 0..1 (name the column error_pct or success_pct for %)");
      }
      p.error_ratio = *v;
      return;
    }
    case Role::error_pct:
    case Role::success_pct: {
      auto v = parse_number(number);
      if (!v || *v < 0 || *v > 100) throw bad("a percentage is 0..100");
      // Rounded to 1e-11 so 100 - 99.98 reads back as 0.0002, not 0.00019999999999996.
      double pct = c.role == Role::error_pct ? *v : 100 - *v;
      p.error_ratio = std::round(pct * 1e9) / 1e11;
      return;
    }
  }
}

}  // namespace

std::vector<PhaseStats> read_capacity_csv(std::string_view text, const CsvOptions& options,
                                          std::string* latency_column) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  std::vector<PhaseStats> phases;
  std::vector<Column> cols;
  bool have_columns = false;
  char sep = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view probe = line;
    while (!probe.empty() && (probe.front() == ' ' || probe.front() == '\t'))
      probe.remove_prefix(1);
    if (probe.empty() || probe.front() == '#') continue;
    const std::string where = "line " + std::to_string(line_no);
    if (!sep) sep = separator_of(probe);
    std::vector<std::string_view> fields = split(probe, sep);
    if (!have_columns) {
      have_columns = true;
      if (!options.columns.empty()) {
        cols = columns_from(options.columns, "--columns");
      } else if (looks_like_header(fields)) {
        cols = columns_from(std::vector<std::string>(fields.begin(), fields.end()), where);
        continue;
      } else {
        cols = columns_from(kHeaderlessColumns, "the default columns");
      }
    }
    if (fields.size() < 2) throw CsvError(where + ": expected at least concurrency and throughput");
    if (phases.size() >= kCsvMaxRows) throw CsvError(where + ": more than 10000 rows");
    PhaseStats p;
    for (std::size_t i = 0; i < fields.size() && i < cols.size(); ++i) {
      if (!fields[i].empty()) store(p, cols[i], fields[i], where);
    }
    if (!p.users) throw CsvError(where + ": no concurrency");
    if (!p.rps) throw CsvError(where + ": no throughput");
    p.name = std::to_string(*p.users);
    phases.push_back(std::move(p));
  }
  if (phases.empty()) throw CsvError("no data rows");
  if (latency_column) {
    latency_column->clear();
    for (const Column& c : cols) {
      if (c.role == Role::p95) *latency_column = c.name;
    }
  }
  return phases;
}

}  // namespace loadwatch::analysis
