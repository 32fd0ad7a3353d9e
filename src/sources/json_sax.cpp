#include "sources/json_sax.h"

#include <charconv>
#include <limits>
#include <vector>

namespace loadwatch {

namespace {

class Reader {
 public:
  Reader(std::string_view text, JsonHandler& handler, std::string& error, std::size_t max_depth)
      : s_(text), h_(handler), error_(error), max_depth_(max_depth) {}

  bool run() {
    // A UTF-8 byte order mark may be ignored (RFC 8259 section 8.1); nlohmann does too.
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;
    bool need_value = true;
    for (;;) {
      skip_ws();
      if (need_value) {
        if (i_ >= s_.size()) return fail("unexpected end, expected a value");
        char c = s_[i_];
        if (c == '{' || c == '[') {
          bool object = c == '{';
          ++i_;
          if (stack_.size() >= max_depth_) return fail("nested too deeply");
          stack_.push_back(object);
          if (!(object ? h_.begin_object() : h_.begin_array())) return stopped();
          skip_ws();
          if (i_ < s_.size() && s_[i_] == (object ? '}' : ']')) {
            ++i_;
            stack_.pop_back();
            if (!(object ? h_.end_object() : h_.end_array())) return stopped();
            need_value = false;
          } else if (object && !member_name()) {
            return false;
          }
          continue;
        }
        if (!scalar()) return false;
        need_value = false;
        continue;
      }
      if (stack_.empty()) break;
      if (i_ >= s_.size()) return fail("unexpected end, expected ',' or a closing bracket");
      char c = s_[i_];
      bool object = stack_.back();
      if (c == ',') {
        ++i_;
        if (object && !member_name()) return false;
        need_value = true;
      } else if (c == (object ? '}' : ']')) {
        ++i_;
        stack_.pop_back();
        if (!(object ? h_.end_object() : h_.end_array())) return stopped();
      } else {
        return fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
    skip_ws();
    if (i_ != s_.size()) return fail("unexpected text after the JSON value");
    return true;
  }

 private:
  bool fail(const char* message) {
    error_ = "offset " + std::to_string(i_) + ": " + message;
    return false;
  }
  bool stopped() {
    error_ = "offset " + std::to_string(i_) + ": stopped by handler";
    return false;
  }

  // RFC 8259 whitespace: space, tab, line feed, carriage return.
  void skip_ws() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++i_;
    }
  }

  // "name" ':' — leaves i_ at the member's value.
  bool member_name() {
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != '"') return fail("expected a member name");
    std::string_view name;
    if (!string(name)) return false;
    if (!h_.key(name)) return stopped();
    skip_ws();
    if (i_ >= s_.size() || s_[i_] != ':') return fail("expected ':'");
    ++i_;
    return true;
  }

  bool scalar() {
    char c = s_[i_];
    if (c == '"') {
      std::string_view v;
      if (!string(v)) return false;
      return h_.string(v) || stopped();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    if (literal("true")) return h_.boolean(true) || stopped();
    if (literal("false")) return h_.boolean(false) || stopped();
    if (literal("null")) return h_.null() || stopped();
    return fail("expected a value");
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool digits() {
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ >= s_.size()) return fail("bad number");
    size_t int_start = i_;
    if (s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return fail("bad number");
    }
    size_t int_end = i_, frac_start = i_, frac_end = i_;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      frac_start = i_;
      if (!digits()) return fail("bad number: no digit after '.'");
      frac_end = i_;
    }
    long long exponent = 0;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      bool negative = false;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) negative = s_[i_++] == '-';
      size_t exp_start = i_;
      if (!digits()) return fail("bad number: no digit in the exponent");
      for (size_t k = exp_start; k < i_ && exponent < 1000000000; ++k) {
        exponent = exponent * 10 + (s_[k] - '0');
      }
      if (negative) exponent = -exponent;
    }
    double v = 0;
    auto [p, ec] = std::from_chars(s_.data() + start, s_.data() + i_, v);
    if (ec == std::errc::result_out_of_range) {
      // Overflow is an error (a double cannot hold it; nlohmann rejects it too), underflow
      // is ±0 as strtod gives. Which one: the decimal position of the first significant
      // digit, from the digits and the exponent.
      long long first = -1;
      for (size_t k = int_start; k < frac_end && first < 0; ++k) {
        if (k == int_end) k = frac_start;
        if (k < frac_end && s_[k] != '0') {
          first = k < int_end ? (long long)(int_end - k) : -(long long)(k - frac_start);
        }
      }
      if (first > 0 ? first + exponent > 0 : first + 1 + exponent > 0) {
        return fail("number out of range");
      }
      v = s_[start] == '-' ? -0.0 : 0.0;
    } else if (ec != std::errc() || p != s_.data() + i_) {
      return fail("bad number");
    }
    return h_.number(v) || stopped();
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits at i_ (after "\u"); -1 if malformed.
  long hex4() {
    if (s_.size() - i_ < 4) return -1;
    long v = 0;
    for (int k = 0; k < 4; ++k) {
      int d = hex(s_[i_ + k]);
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    i_ += 4;
    return v;
  }

  static void put_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
      out.push_back(char(cp));
    } else if (cp < 0x800) {
      out.push_back(char(0xC0 | (cp >> 6)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(char(0xE0 | (cp >> 12)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(char(0xF0 | (cp >> 18)));
      out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  // Length of the valid UTF-8 sequence starting at i_ (RFC 3629 table), 0 if invalid.
  size_t utf8_length() const {
    auto at = [&](size_t k) -> unsigned {
      return i_ + k < s_.size() ? static_cast<unsigned char>(s_[i_ + k]) : 0u;
    };
    auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
      unsigned c = at(k);
      return c >= lo && c <= hi;
    };
    unsigned c = at(0);
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
    if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
    return 0;
  }

  // A string at s_[i_] == '"'. Without escapes the view points into the input (no copy);
  // with escapes it points into scratch_.
  bool string(std::string_view& out) {
    ++i_;
    size_t start = i_;
    bool copied = false;
    for (;;) {
      if (i_ >= s_.size()) return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        out = copied ? std::string_view(scratch_) : s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("control character in string");
      if (c < 0x80 && c != '\\') {
        if (copied) scratch_.push_back(char(c));
        ++i_;
        continue;
      }
      if (c >= 0x80) {
        size_t n = utf8_length();
        if (n == 0) return fail("invalid UTF-8 in string");
        if (copied) scratch_.append(s_.substr(i_, n));
        i_ += n;
        continue;
      }
      // A backslash: from here on the string is built in scratch_.
      if (!copied) {
        scratch_.assign(s_.substr(start, i_ - start));
        copied = true;
      }
      ++i_;
      if (i_ >= s_.size()) return fail("unterminated string");
      char e = s_[i_++];
      switch (e) {
        case '"':
          scratch_.push_back('"');
          break;
        case '\\':
          scratch_.push_back('\\');
          break;
        case '/':
          scratch_.push_back('/');
          break;
        case 'b':
          scratch_.push_back('\b');
          break;
        case 'f':
          scratch_.push_back('\f');
          break;
        case 'n':
          scratch_.push_back('\n');
          break;
        case 'r':
          scratch_.push_back('\r');
          break;
        case 't':
          scratch_.push_back('\t');
          break;
        case 'u': {
          long cp = hex4();
          if (cp < 0) return fail("bad \\u escape");
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("unpaired low surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // UTF-16 surrogate pair: \uD83D\uDE00.
            if (s_.substr(i_, 2) != "\\u") return fail("unpaired high surrogate");
            i_ += 2;
            long lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("unpaired high surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(scratch_, static_cast<unsigned long>(cp));
          break;
        }
        default:
          --i_;
          return fail("invalid escape in string");
      }
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  JsonHandler& h_;
  std::string& error_;
  std::size_t max_depth_;
  std::vector<bool> stack_;  // true = object
  std::string scratch_;
};

}  // namespace

bool json_sax(std::string_view text, JsonHandler& handler, std::string& error,
              std::size_t max_depth) {
  return Reader(text, handler, error, max_depth).run();
}

}  // namespace loadwatch
