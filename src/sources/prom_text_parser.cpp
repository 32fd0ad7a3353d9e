#include "sources/prom_text_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace loadwatch {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Counts are uint64 in prometheus-cpp; a float count ("1.5e3", NaN, negative) is clamped
// instead of converted directly, which would be undefined behaviour out of range.
std::uint64_t to_count(double v) {
  if (!(v > 0)) return 0;  // also NaN
  if (v >= 18446744073709551615.0) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(v);
}

enum class Part { Plain, Sum, Count, Bucket };

struct FamilyState {
  MetricFamily family;
  bool has_help = false;
  bool has_type = false;
  bool has_samples = false;
  bool touched = false;  // strict: a line of it was seen (its lines must be contiguous)
  // Summary/histogram: label signature (without quantile/le) -> index in family.metric.
  std::unordered_map<std::string, size_t> by_signature;
};

struct Label {
  std::string name;
  std::string value;
};

class Parser {
 public:
  Parser(std::string_view text, const PromTextLimits& limits) : text_(text), limits_(limits) {}

  PromTextParse run() {
    PromTextParse result;
    size_t pos = 0;
    size_t line_no = 0;
    while (pos < text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos, end - pos);
      ++line_no;
      pos = end + 1;
      if (!limits_.strict && !line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!parse_line(line)) {
        result.error = "line " + std::to_string(line_no) + ": " + error_;
        return result;
      }
    }
    result.dropped = std::move(dropped_);
    result.families.reserve(families_.size());
    for (auto& st : families_) {
      if (!st.family.metric.empty()) result.families.push_back(std::move(st.family));
    }
    return result;
  }

 private:
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  static void skip_blanks(std::string_view s, size_t& i) {
    while (i < s.size() && is_blank(s[i])) ++i;
  }

  static std::string_view token(std::string_view s, size_t& i) {
    size_t start = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    return s.substr(start, i - start);
  }

  FamilyState* find(std::string_view name) {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &families_[it->second];
  }

  // Null when the family is new and the parse already holds as many families as it may keep
  // series: its lines are then dropped (HELP/TYPE lines ignored).
  FamilyState* find_or_create(std::string_view name) {
    if (families_.size() >= limits_.max_series && !find(name)) return nullptr;
    auto [it, inserted] = index_.try_emplace(std::string(name), families_.size());
    if (inserted) {
      families_.emplace_back();
      families_.back().family.name = std::string(name);
      families_.back().family.type = MetricType::Untyped;
    }
    return &families_[it->second];
  }

  // Strict mode: every line of a family comes in one block.
  bool touch(FamilyState& st) {
    std::size_t index = static_cast<std::size_t>(&st - families_.data());
    if (!limits_.strict || index == last_touched_) return true;
    if (st.touched) return fail("lines of family " + st.family.name + " are not contiguous");
    st.touched = true;
    last_touched_ = index;
    return true;
  }

  void drop(const char* reason) { count_drop(dropped_, reason); }

  bool parse_line(std::string_view line) {
    size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size()) return true;  // blank line
    if (line[i] == '#') return parse_comment(line, i + 1);
    return parse_sample(line, i);
  }

  // "# HELP name doc", "# TYPE name type"; any other '#' line is a comment. The spec writes
  // the keyword after "# ", so "#HELP" is a plain comment.
  bool parse_comment(std::string_view line, size_t i) {
    if (i >= line.size() || !is_blank(line[i])) return true;
    skip_blanks(line, i);
    std::string_view keyword = token(line, i);
    bool help = keyword == "HELP";
    if (!help && keyword != "TYPE") return true;
    skip_blanks(line, i);
    std::string_view name = token(line, i);
    if (name.empty()) return fail(std::string(keyword) + " line without a metric name");
    if (!valid_metric_name(name)) return fail("invalid metric name \"" + std::string(name) + "\"");
    skip_blanks(line, i);  // expfmt strips the blanks before the docstring/type
    std::string_view rest = line.substr(i);
    FamilyState* found = find_or_create(name);
    if (!found) {  // over the cap: the line is still checked, then ignored
      std::string doc;
      return !help || unescape_help(rest, doc);
    }
    FamilyState& st = *found;
    if (!touch(st)) return false;
    if (help) {
      if (st.has_help) return fail("second HELP line for metric " + std::string(name));
      if (limits_.strict && st.has_samples)
        return fail("HELP line for metric " + std::string(name) + " after its samples");
      std::string doc;
      if (!unescape_help(rest, doc)) return false;
      if (limits_.strict && !valid_utf8(doc))
        return fail("HELP text of " + std::string(name) + " is not valid UTF-8");
      st.family.help = std::move(doc);
      st.has_help = true;
      return true;
    }
    size_t j = 0;
    skip_blanks(rest, j);
    std::string_view type = rest.substr(j);
    while (!type.empty() && is_blank(type.back())) type.remove_suffix(1);
    if (st.has_type) return fail("second TYPE line for metric " + std::string(name));
    if (st.has_samples)
      return fail("TYPE line for metric " + std::string(name) + " after its samples");
    if (type == "counter") {
      st.family.type = MetricType::Counter;
    } else if (type == "gauge") {
      st.family.type = MetricType::Gauge;
    } else if (type == "histogram") {
      st.family.type = MetricType::Histogram;
    } else if (type == "summary") {
      st.family.type = MetricType::Summary;
    } else if (type == "untyped") {
      st.family.type = MetricType::Untyped;
    } else {
      return fail("unknown metric type \"" + std::string(type) + "\" for " + std::string(name));
    }
    st.has_type = true;
    return true;
  }

  // HELP text escapes are only \\ and \n (spec); anything else after a backslash is an error.
  // Text past max_help is checked, not kept; the cut is made at a UTF-8 boundary.
  bool unescape_help(std::string_view in, std::string& out) {
    // 4 bytes over the cap so truncate_utf8 sees where the sequence at the cut ends.
    std::size_t keep = limits_.max_help > SIZE_MAX - 4 ? SIZE_MAX : limits_.max_help + 4;
    out.reserve(std::min(in.size(), keep));
    auto put = [&](char c) {
      if (out.size() < keep) out.push_back(c);
    };
    for (size_t i = 0; i < in.size(); ++i) {
      char c = in[i];
      if (c != '\\') {
        put(c);
        continue;
      }
      if (++i >= in.size()) return fail("HELP text ends in a lone backslash");
      if (in[i] == '\\') {
        put('\\');
      } else if (in[i] == 'n') {
        put('\n');
      } else {
        return fail(std::string("invalid escape sequence \\") + in[i] + " in HELP text");
      }
    }
    truncate_utf8(out, limits_.max_help);
    return true;
  }

  bool parse_labels(std::string_view line, size_t& i, std::vector<Label>& labels) {
    ++i;  // '{'
    for (;;) {
      skip_blanks(line, i);
      if (i >= line.size()) return fail("unterminated label set");
      if (line[i] == '}') {
        ++i;
        return true;
      }
      size_t start = i;
      while (i < line.size() && (is_alpha_(line[i]) || is_digit(line[i]))) ++i;
      std::string_view name = line.substr(start, i - start);
      if (!valid_label_name(name)) {
        if (name.empty()) return fail("expected a label name");
        return fail("invalid label name \"" + std::string(name) + "\"");
      }
      if (name == "__name__") return fail("label name __name__ is reserved");
      // Past the label cap the sample is dropped, so names are no longer kept or compared:
      // a line of 100,000 labels costs its length, not its square.
      bool keep = labels.size() < limits_.max_labels && name.size() <= limits_.max_label_name;
      if (!keep) sample_drop_ = drop_reason::kLabelLimit;
      for (const auto& l : labels) {
        if (l.name == name) return fail("duplicate label name \"" + std::string(name) + "\"");
      }
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '=')
        return fail("expected '=' after label " + std::string(name));
      ++i;
      skip_blanks(line, i);
      if (i >= line.size() || line[i] != '"')
        return fail("expected '\"' to open the value of label " + std::string(name));
      ++i;
      std::string value;
      bool closed = false;
      // A value past the cap is read to its end (for the syntax) but not stored.
      auto put = [&](char c) {
        if (!keep) return;
        if (value.size() < limits_.max_label_value) {
          value.push_back(c);
        } else {
          keep = false;
          sample_drop_ = drop_reason::kLabelLimit;
          value = std::string();
        }
      };
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          put(c);
          continue;
        }
        // Label value escapes: \\, \" and \n (spec); anything else is an error.
        if (i >= line.size()) break;
        char e = line[i++];
        if (e == '\\') {
          put('\\');
        } else if (e == '"') {
          put('"');
        } else if (e == 'n') {
          put('\n');
        } else {
          return fail(std::string("invalid escape sequence \\") + e + " in label value");
        }
      }
      if (!closed) return fail("unterminated value of label " + std::string(name));
      if (limits_.strict && !valid_utf8(value))
        return fail("value of label " + std::string(name) + " is not valid UTF-8");
      // The cap holds for the value as written again: invalid UTF-8 comes out as U+FFFD.
      if (keep && !limits_.strict && !fits_once_repaired(value, limits_.max_label_value)) {
        keep = false;
        sample_drop_ = drop_reason::kLabelLimit;
      }
      if (keep) labels.push_back({std::string(name), std::move(value)});
      skip_blanks(line, i);
      if (i >= line.size()) return fail("unterminated label set");
      if (line[i] == ',') {
        ++i;
        continue;
      }
      if (line[i] != '}') return fail("expected ',' or '}' after label " + std::string(name));
    }
  }

  static std::string signature(const std::vector<Label>& labels, std::string_view skip) {
    std::vector<const Label*> sorted;
    for (const auto& l : labels) {
      if (l.name != skip) sorted.push_back(&l);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](const Label* a, const Label* b) { return a->name < b->name; });
    std::string sig;
    for (const Label* l : sorted) {
      sig += l->name;
      sig.push_back('\0');
      sig += l->value;
      sig.push_back('\0');
    }
    return sig;
  }

  static std::vector<ClientMetric::Label> to_metric_labels(std::vector<Label>& labels,
                                                           std::string_view skip) {
    std::vector<ClientMetric::Label> out;
    out.reserve(labels.size());
    for (auto& l : labels) {
      if (l.name != skip) out.push_back({std::move(l.name), std::move(l.value)});
    }
    return out;
  }

  // Which family a sample name belongs to: its own name first, then a summary/histogram
  // whose name it extends with _sum/_count/_bucket (expfmt's rule).
  FamilyState* family_for_sample(std::string_view name, Part& part) {
    part = Part::Plain;
    if (FamilyState* st = find(name)) return st;
    struct Suffix {
      std::string_view text;
      Part part;
    };
    static constexpr Suffix suffixes[] = {
        {"_sum", Part::Sum}, {"_count", Part::Count}, {"_bucket", Part::Bucket}};
    for (const auto& s : suffixes) {
      if (name.size() <= s.text.size() || name.substr(name.size() - s.text.size()) != s.text)
        continue;
      FamilyState* base = find(name.substr(0, name.size() - s.text.size()));
      if (!base) continue;
      MetricType t = base->family.type;
      bool fits =
          t == MetricType::Histogram || (t == MetricType::Summary && s.part != Part::Bucket);
      if (fits) {
        part = s.part;
        return base;
      }
    }
    return find_or_create(name);
  }

  bool parse_sample(std::string_view line, size_t i) {
    size_t start = i;
    while (i < line.size() && !is_blank(line[i]) && line[i] != '{') ++i;
    std::string_view name = line.substr(start, i - start);
    if (!valid_metric_name(name)) return fail("invalid metric name \"" + std::string(name) + "\"");
    skip_blanks(line, i);
    std::vector<Label> labels;
    sample_drop_ = nullptr;
    if (i < line.size() && line[i] == '{') {
      if (!parse_labels(line, i, labels)) return false;
      skip_blanks(line, i);
    }
    std::string_view value_token = token(line, i);
    if (value_token.empty()) return fail("missing value for metric " + std::string(name));
    double value = 0;
    if (!parse_prom_value(value_token, value)) {
      return fail("invalid value \"" + std::string(value_token) + "\" for metric " +
                  std::string(name));
    }
    skip_blanks(line, i);
    std::int64_t timestamp = 0;
    if (i < line.size()) {
      std::string_view ts = token(line, i);
      std::string_view digits = ts;
      if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), timestamp);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() ||
          (digits[0] == '-' && ts[0] == '+')) {
        return fail("invalid timestamp \"" + std::string(ts) + "\" for metric " +
                    std::string(name));
      }
      skip_blanks(line, i);
      if (i < line.size())
        return fail("unexpected text after the timestamp of metric " + std::string(name));
    }

    Part part = Part::Plain;
    FamilyState* found = family_for_sample(name, part);
    if (!found) {
      drop(drop_reason::kMaxSeries);
      return true;
    }
    FamilyState& st = *found;
    if (!touch(st)) return false;
    st.has_samples = true;
    if (limits_.strict && !seen_series_.insert(series_key(name, labels)).second)
      return fail("duplicate series " + std::string(name));
    if (sample_drop_) {
      drop(sample_drop_);
      return true;
    }
    if (kept_ >= limits_.max_series) {
      drop(drop_reason::kMaxSeries);
      return true;
    }
    MetricType type = st.family.type;
    if (type != MetricType::Summary && type != MetricType::Histogram) {
      ++kept_;
      ClientMetric m;
      m.label = to_metric_labels(labels, {});
      m.timestamp_ms = timestamp;
      switch (type) {
        case MetricType::Counter:
          m.counter.value = value;
          break;
        case MetricType::Gauge:
          m.gauge.value = value;
          break;
        default:
          m.untyped.value = value;
          break;
      }
      st.family.metric.push_back(std::move(m));
      return true;
    }

    bool summary = type == MetricType::Summary;
    // As in expfmt, quantile (summary) and le (histogram) are never labels of the metric,
    // on any sample of the family; they are required where they carry the bound.
    std::string_view special = summary ? "quantile" : "le";
    bool needs_bound = summary ? part == Part::Plain : part == Part::Bucket;
    if (part == Part::Plain && !summary) {
      return fail("histogram sample " + std::string(name) +
                  " needs a _bucket, _sum or _count suffix");
    }
    double bound = 0;
    if (needs_bound) {
      auto it = std::find_if(labels.begin(), labels.end(),
                             [&](const Label& l) { return l.name == special; });
      if (it == labels.end()) {
        return fail(std::string(summary ? "summary" : "histogram") + " sample " +
                    std::string(name) + " without a " + std::string(special) + " label");
      }
      if (!parse_prom_value(it->value, bound)) {
        return fail("invalid " + std::string(special) + " label value \"" + it->value + "\"");
      }
    }
    std::string sig = signature(labels, special);
    auto [it, inserted] = st.by_signature.try_emplace(std::move(sig), st.family.metric.size());
    if (inserted) {
      st.family.metric.emplace_back();
      st.family.metric.back().label = to_metric_labels(labels, special);
    }
    ClientMetric& m = st.family.metric[it->second];
    if (part == Part::Plain && m.summary.quantile.size() >= limits_.max_quantiles) {
      drop(drop_reason::kMaxQuantiles);
      return true;
    }
    if (part == Part::Bucket && m.histogram.bucket.size() >= limits_.max_buckets) {
      drop(drop_reason::kMaxBuckets);
      return true;
    }
    ++kept_;
    m.timestamp_ms = timestamp;
    switch (part) {
      case Part::Plain:
        m.summary.quantile.push_back({bound, value});
        break;
      case Part::Sum:
        (summary ? m.summary.sample_sum : m.histogram.sample_sum) = value;
        break;
      case Part::Count:
        (summary ? m.summary.sample_count : m.histogram.sample_count) = to_count(value);
        break;
      case Part::Bucket:
        m.histogram.bucket.push_back({to_count(value), bound});
        break;
    }
    return true;
  }

  // Strict mode: the sample name and every label, sorted, as one key.
  static std::string series_key(std::string_view name, const std::vector<Label>& labels) {
    std::string key(name);
    key.push_back('\0');
    key += signature(labels, {});
    return key;
  }

  std::string_view text_;
  const PromTextLimits& limits_;
  std::string error_;
  std::vector<FamilyState> families_;
  std::unordered_map<std::string, size_t> index_;
  DropCounts dropped_;
  std::size_t kept_ = 0;                         // sample lines stored
  const char* sample_drop_ = nullptr;            // why the sample being read will be dropped
  std::size_t last_touched_ = SIZE_MAX;          // index in families_
  std::unordered_set<std::string> seen_series_;  // strict mode only
};

}  // namespace

bool parse_prom_value(std::string_view s, double& out) {
  if (s.empty()) return false;
  bool negative = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  // Go's ParseFloat spellings of the special values (case-insensitive).
  if (iequals(body, "nan")) {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (iequals(body, "inf") || iequals(body, "infinity")) {
    out = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
    return true;
  }
  // Only decimal digits, '.', exponent from here: from_chars would also take "nan(...)".
  if (!(is_digit(body[0]) || body[0] == '.')) return false;
  double v = 0;
  auto [p, ec] =
      std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (p != body.data() + body.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Go returns ±Inf or ±0 with an error flag; a huge literal is a valid (infinite) sample.
    size_t e = body.find_first_of("eE");
    bool tiny = e != std::string_view::npos && body.find('-', e) != std::string_view::npos;
    v = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc()) {
    return false;
  }
  out = negative ? -v : v;
  return true;
}

PromTextParse parse_prom_text(std::string_view text, const PromTextLimits& limits) {
  return Parser(text, limits).run();
}

PromTextParse parse_prom_text(std::string_view text) { return parse_prom_text(text, {}); }

}  // namespace loadwatch
