#include "metrics/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace loadwatch {

namespace {

bool is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the well-formed UTF-8 sequence at s[i] (Unicode 15, table 3-7), 0 if there is
// none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = s.size() - i;
  auto cont = [&](std::size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return b(i + k) >= lo && b(i + k) <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3) return 0;
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    unsigned char hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4) return 0;
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The text of a number exactly as prometheus-cpp 1.0.1 writes it: "%.16g" in the C locale,
// "Nan", "+Inf", "-Inf".
void put_number(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "Nan";
  } else if (std::isinf(v)) {
    out += v < 0 ? "-Inf" : "+Inf";
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general,
                           std::numeric_limits<double>::max_digits10 - 1);
    out.append(buf, r.ptr);
  }
}

void put_count(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Appends `text` escaped: `\\` and `\n` always, `\"` when `quote` (label values). Invalid
// UTF-8 comes out as U+FFFD, so the page stays valid whatever a producer left in it.
void put_escaped(std::string& out, std::string_view text, bool quote) {
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      std::size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += kReplacement;
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
    ++i;
  }
}

struct Extra {
  std::string_view name;  // empty: no extra label
  double value = 0;
  bool inf = false;  // write "+Inf" (the histogram's implied last bucket)
};

void put_head(std::string& out, const prometheus::MetricFamily& family,
              const prometheus::ClientMetric& metric, std::string_view suffix,
              const Extra& extra = {}) {
  out += family.name;
  out += suffix;
  if (!metric.label.empty() || !extra.name.empty()) {
    out.push_back('{');
    const char* sep = "";
    for (const auto& l : metric.label) {
      out += sep;
      out += l.name;
      out += "=\"";
      put_escaped(out, l.value, true);
      out.push_back('"');
      sep = ",";
    }
    if (!extra.name.empty()) {
      out += sep;
      out += extra.name;
      out += "=\"";
      if (extra.inf) {
        out += "+Inf";
      } else {
        put_number(out, extra.value);
      }
      out.push_back('"');
    }
    out.push_back('}');
  }
  out.push_back(' ');
}

void put_tail(std::string& out, const prometheus::ClientMetric& metric) {
  if (metric.timestamp_ms != 0) {
    out.push_back(' ');
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, metric.timestamp_ms);
    out.append(buf, r.ptr);
  }
  out.push_back('\n');
}

const char* type_name(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Histogram:
      return "histogram";
    default:
      return "untyped";
  }
}

void put_family(std::string& out, const prometheus::MetricFamily& f) {
  using prometheus::MetricType;
  if (!f.help.empty()) {
    out += "# HELP ";
    out += f.name;
    out.push_back(' ');
    put_escaped(out, f.help, false);
    out.push_back('\n');
  }
  out += "# TYPE ";
  out += f.name;
  out.push_back(' ');
  out += type_name(f.type);
  out.push_back('\n');
  for (const auto& m : f.metric) {
    switch (f.type) {
      case MetricType::Counter:
        put_head(out, f, m, "");
        put_number(out, m.counter.value);
        put_tail(out, m);
        break;
      case MetricType::Gauge:
        put_head(out, f, m, "");
        put_number(out, m.gauge.value);
        put_tail(out, m);
        break;
      case MetricType::Summary:
        put_head(out, f, m, "_count");
        put_count(out, m.summary.sample_count);
        put_tail(out, m);
        put_head(out, f, m, "_sum");
        put_number(out, m.summary.sample_sum);
        put_tail(out, m);
        for (const auto& q : m.summary.quantile) {
          put_head(out, f, m, "", {"quantile", q.quantile});
          put_number(out, q.value);
          put_tail(out, m);
        }
        break;
      case MetricType::Histogram: {
        put_head(out, f, m, "_count");
        put_count(out, m.histogram.sample_count);
        put_tail(out, m);
        put_head(out, f, m, "_sum");
        put_number(out, m.histogram.sample_sum);
        put_tail(out, m);
        double last = -std::numeric_limits<double>::infinity();
        for (const auto& b : m.histogram.bucket) {
          put_head(out, f, m, "_bucket", {"le", b.upper_bound});
          last = b.upper_bound;
          put_count(out, b.cumulative_count);
          put_tail(out, m);
        }
        if (last != std::numeric_limits<double>::infinity()) {
          put_head(out, f, m, "_bucket", {"le", 0, true});
          put_count(out, m.histogram.sample_count);
          put_tail(out, m);
        }
        break;
      }
      default:
        put_head(out, f, m, "");
        put_number(out, m.untyped.value);
        put_tail(out, m);
        break;
    }
  }
}

}  // namespace

bool valid_metric_name(std::string_view name) {
  if (name.empty() || !(is_alpha_(name[0]) || name[0] == ':')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alpha_(c) || is_digit(c) || c == ':'; });
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || !is_alpha_(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return is_alpha_(c) || is_digit(c); });
}

std::size_t utf8_char_length(std::string_view text, std::size_t i) {
  return utf8_sequence(text, i);
}

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool replace_invalid_utf8(std::string& text) {
  if (valid_utf8(text)) return false;
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  text = std::move(out);
  return true;
}

bool fits_once_repaired(std::string_view text, std::size_t max_bytes) {
  if (text.size() > max_bytes) return false;
  if (text.size() <= max_bytes / kReplacement.size()) return true;
  std::size_t size = 0;
  for (std::size_t i = 0; i < text.size() && size <= max_bytes;) {
    std::size_t n = utf8_sequence(text, i);
    size += n == 0 ? kReplacement.size() : n;
    i += n == 0 ? 1 : n;
  }
  return size <= max_bytes;
}

void truncate_utf8(std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return;
  std::size_t cut = max_bytes;
  // Back up over continuation bytes to the start of the sequence that would be split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
}

std::string serialize_text(const std::vector<prometheus::MetricFamily>& families) {
  std::size_t estimate = 0;
  for (const auto& f : families) estimate += 64 + f.help.size() + f.metric.size() * 48;
  std::string out;
  out.reserve(estimate);
  for (const auto& f : families) put_family(out, f);
  return out;
}

void append_escaped_label_value(std::string& out, std::string_view value) {
  put_escaped(out, value, true);
}

void append_number(std::string& out, double value) { put_number(out, value); }

}  // namespace loadwatch
