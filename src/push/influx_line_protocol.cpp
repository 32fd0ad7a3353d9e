// InfluxDB line protocol, following the 1.x reference
// (https://docs.influxdata.com/influxdb/v1/write_protocols/line_protocol_reference/):
//   measurement[,tag=value...] field=value[,field=value...] [timestamp]
// Quirks handled here, each one seen from a real writer:
// - Measurement escapes "\," and "\ "; tag keys, tag values and field keys also "\="; a
//   backslash before any other character is literal (InfluxDB keeps it).
// - String field values are double-quoted with "\"" and "\\" escapes and may span lines, so
//   line splitting cannot be a plain split on '\n'.
// - JMeter writes `application=` with an empty value when no application name is set; the
//   spec forbids empty tag values but InfluxDB 1.x stores the point, so we accept it.
// - Integers carry an `i` suffix, unsigned (2.x) a `u`; booleans are t/T/true/True/TRUE and
//   f/F/false/False/FALSE; floats never NaN or Inf.
#include "push/influx_line_protocol.h"

#include <charconv>
#include <string>

namespace loadwatch {

std::optional<std::string_view> InfluxPoint::tag(std::string_view key) const {
  for (const auto& t : tags) {
    if (t.key == key) return t.value;
  }
  return std::nullopt;
}

const InfluxField* InfluxPoint::field(std::string_view key) const {
  for (const auto& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

std::optional<std::int64_t> influx_precision_ns(std::string_view p) {
  if (p.empty() || p == "n" || p == "ns") return 1;
  if (p == "u" || p == "us" || p == "µ") return 1000;
  if (p == "ms") return 1000000;
  if (p == "s") return 1000000000;
  if (p == "m") return 60'000'000'000;
  if (p == "h") return 3'600'000'000'000;
  return std::nullopt;
}

namespace {

/// Text either in the body or in the scratch buffer; resolved to views once a line is done
/// (scratch may grow while the line is parsed, so views into it are taken only at the end).
struct Text {
  bool scratch = false;
  size_t off = 0, len = 0;
};

struct RawTag {
  Text key, value;
};

struct RawField {
  Text key;
  InfluxField::Type type;
  double number;
  Text text;
};

enum class Kind { Measurement, Key, TagValue };

class Parser {
 public:
  Parser(std::string_view body, const std::function<void(const InfluxPoint&)>& on_point,
         const std::function<void(const InfluxParseError&)>& on_error)
      : b_(body), on_point_(on_point), on_error_(on_error) {}

  void run() {
    while (pos_ < b_.size()) {
      size_t start = pos_, start_line = line_;
      const char* err = parse_line();
      if (err == skip_) continue;
      if (err) {
        // Recover at the next newline from where parsing stopped.
        while (pos_ < b_.size() && b_[pos_] != '\n') ++pos_;
        size_t end = pos_;
        if (pos_ < b_.size()) {
          ++pos_;
          ++line_;
        }
        auto text = b_.substr(start, std::min<size_t>(end - start, 200));
        if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        on_error_(InfluxParseError{start_line, err, text});
        continue;
      }
      point_.line = start_line;
      resolve();
      on_point_(point_);
    }
  }

 private:
  static constexpr const char* skip_ = "";  // marker: blank or comment line, no point

  bool at_end() const { return pos_ >= b_.size(); }
  char cur() const { return b_[pos_]; }

  std::string_view view(Text t) const {
    return t.scratch ? std::string_view(scratch_).substr(t.off, t.len) : b_.substr(t.off, t.len);
  }

  void skip_blanks() {
    while (!at_end() && (cur() == ' ' || cur() == '\t')) ++pos_;
  }

  // Reads a measurement, key or tag value up to an unescaped delimiter. Copies to scratch only
  // when an escape is present, so the common case allocates nothing.
  Text read_name(Kind kind) {
    size_t start = pos_;
    bool escaped = false;
    while (!at_end()) {
      char c = cur();
      if (c == '\\' && pos_ + 1 < b_.size()) {
        char n = b_[pos_ + 1];
        if (n == ',' || n == ' ' || (n == '=' && kind != Kind::Measurement)) {
          escaped = true;
          pos_ += 2;
          continue;
        }
      }
      if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') break;
      if (c == '=' && kind != Kind::Measurement) break;
      ++pos_;
    }
    if (!escaped) return Text{false, start, pos_ - start};
    size_t off = scratch_.size();
    for (size_t i = start; i < pos_; ++i) {
      char c = b_[i];
      if (c == '\\' && i + 1 < pos_) {
        char n = b_[i + 1];
        if (n == ',' || n == ' ' || (n == '=' && kind != Kind::Measurement)) {
          scratch_ += n;
          ++i;
          continue;
        }
      }
      scratch_ += c;
    }
    return Text{true, off, scratch_.size() - off};
  }

  // A quoted string field value; pos_ is on the opening quote.
  const char* read_string(Text& out) {
    ++pos_;
    size_t start = pos_;
    bool escaped = false;
    for (;;) {
      if (at_end()) return "unterminated string field value";
      char c = cur();
      if (c == '\\' && pos_ + 1 < b_.size() && (b_[pos_ + 1] == '"' || b_[pos_ + 1] == '\\')) {
        escaped = true;
        pos_ += 2;
        continue;
      }
      if (c == '"') break;
      if (c == '\n') ++line_;
      ++pos_;
    }
    size_t end = pos_++;
    if (!escaped) {
      out = Text{false, start, end - start};
      return nullptr;
    }
    size_t off = scratch_.size();
    for (size_t i = start; i < end; ++i) {
      if (b_[i] == '\\' && i + 1 < end && (b_[i + 1] == '"' || b_[i + 1] == '\\')) ++i;
      scratch_ += b_[i];
    }
    out = Text{true, off, scratch_.size() - off};
    return nullptr;
  }

  static bool parse_bool(std::string_view v, double& out) {
    if (v == "t" || v == "T" || v == "true" || v == "True" || v == "TRUE") {
      out = 1;
      return true;
    }
    if (v == "f" || v == "F" || v == "false" || v == "False" || v == "FALSE") {
      out = 0;
      return true;
    }
    return false;
  }

  static const char* parse_number(std::string_view v, RawField& f) {
    char last = v.back();
    if (last == 'i' || last == 'u') {
      auto digits = v.substr(0, v.size() - 1);
      if (digits.empty()) return "invalid number";
      const char* end = digits.data() + digits.size();
      if (last == 'i') {
        std::int64_t n = 0;
        auto [p, ec] = std::from_chars(digits.data(), end, n);
        if (ec == std::errc::result_out_of_range) return "integer out of range";
        if (ec != std::errc() || p != end) return "invalid integer";
        f.type = InfluxField::Type::Integer;
        f.number = static_cast<double>(n);
      } else {
        std::uint64_t n = 0;
        auto [p, ec] = std::from_chars(digits.data(), end, n);
        if (ec == std::errc::result_out_of_range) return "unsigned integer out of range";
        if (ec != std::errc() || p != end) return "invalid unsigned integer";
        f.type = InfluxField::Type::UInteger;
        f.number = static_cast<double>(n);
      }
      return nullptr;
    }
    if (parse_bool(v, f.number)) {
      f.type = InfluxField::Type::Boolean;
      return nullptr;
    }
    // Floats start with a digit, '-' or '.': this also rules out from_chars' "nan"/"inf",
    // which InfluxDB refuses.
    char first = v.front();
    if (!(first == '-' || first == '.' || (first >= '0' && first <= '9'))) {
      return "invalid field value";
    }
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), f.number);
    if (ec == std::errc::result_out_of_range) return "float out of range";
    if (ec != std::errc() || p != v.data() + v.size()) return "invalid field value";
    f.type = InfluxField::Type::Float;
    return nullptr;
  }

  const char* parse_fields() {
    for (;;) {
      RawField f{};
      f.key = read_name(Kind::Key);
      if (f.key.len == 0) return "missing field key";
      if (at_end() || cur() != '=') return "missing '=' after field key";
      ++pos_;
      if (at_end()) return "missing field value";
      if (cur() == '"') {
        if (const char* e = read_string(f.text)) return e;
        f.type = InfluxField::Type::String;
      } else {
        size_t start = pos_;
        while (!at_end() && cur() != ',' && cur() != ' ' && cur() != '\t' && cur() != '\n' &&
               cur() != '\r') {
          ++pos_;
        }
        if (pos_ == start) return "missing field value";
        if (const char* e = parse_number(b_.substr(start, pos_ - start), f)) return e;
      }
      if (fields_.size() >= kInfluxMaxFields) return "too many fields";
      fields_.push_back(f);
      if (at_end() || cur() != ',') return nullptr;
      ++pos_;
    }
  }

  // After the last field: optional timestamp, then end of line.
  const char* parse_tail() {
    skip_blanks();
    if (!at_end() && cur() != '\n' && cur() != '\r') {
      size_t start = pos_;
      while (!at_end() && cur() != ' ' && cur() != '\t' && cur() != '\n' && cur() != '\r') ++pos_;
      std::int64_t ts = 0;
      const char* first = b_.data() + start;
      const char* last = b_.data() + pos_;
      auto [p, ec] = std::from_chars(first, last, ts);
      if (ec == std::errc::result_out_of_range) return "timestamp out of range";
      if (ec != std::errc() || p != last) return "invalid timestamp";
      point_.timestamp = ts;
      skip_blanks();
    }
    if (!at_end() && cur() == '\r') ++pos_;
    if (at_end()) return nullptr;
    if (cur() != '\n') return "unexpected text after timestamp";
    ++pos_;
    ++line_;
    return nullptr;
  }

  const char* parse_line() {
    scratch_.clear();
    tags_.clear();
    fields_.clear();
    point_.timestamp.reset();
    skip_blanks();
    if (!at_end() && cur() == '\r') ++pos_;
    if (at_end()) return skip_;
    if (cur() == '\n' || cur() == '#') {
      while (!at_end() && cur() != '\n') ++pos_;
      if (!at_end()) {
        ++pos_;
        ++line_;
      }
      return skip_;
    }
    measurement_ = read_name(Kind::Measurement);
    if (measurement_.len == 0) return "missing measurement";
    while (!at_end() && cur() == ',') {
      ++pos_;
      RawTag t;
      t.key = read_name(Kind::Key);
      if (t.key.len == 0) return "missing tag key";
      if (at_end() || cur() != '=') return "missing '=' after tag key";
      ++pos_;
      t.value = read_name(Kind::TagValue);
      if (!at_end() && cur() == '=') return "unescaped '=' in tag value";
      if (tags_.size() >= kInfluxMaxTags) return "too many tags";
      tags_.push_back(t);
    }
    if (at_end() || (cur() != ' ' && cur() != '\t')) return "missing fields";
    skip_blanks();
    if (at_end() || cur() == '\n' || cur() == '\r') return "missing fields";
    if (const char* e = parse_fields()) return e;
    return parse_tail();
  }

  void resolve() {
    point_.measurement = view(measurement_);
    point_.tags.clear();
    point_.fields.clear();
    for (const auto& t : tags_) point_.tags.push_back({view(t.key), view(t.value)});
    for (const auto& f : fields_) {
      point_.fields.push_back(
          {view(f.key), f.type, f.number,
           f.type == InfluxField::Type::String ? view(f.text) : std::string_view()});
    }
  }

  std::string_view b_;
  const std::function<void(const InfluxPoint&)>& on_point_;
  const std::function<void(const InfluxParseError&)>& on_error_;
  size_t pos_ = 0;
  size_t line_ = 1;
  std::string scratch_;
  Text measurement_;
  std::vector<RawTag> tags_;
  std::vector<RawField> fields_;
  InfluxPoint point_;
};

}  // namespace

void parse_influx_lines(std::string_view body,
                        const std::function<void(const InfluxPoint&)>& on_point,
                        const std::function<void(const InfluxParseError&)>& on_error) {
  Parser(body, on_point, on_error).run();
}

}  // namespace loadwatch
