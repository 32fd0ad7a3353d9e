#include "report/label_matchers.h"

#include <cctype>

namespace loadwatch::report {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::string parse() {
    skip_space();
    bool braced = peek() == '{';
    if (braced) ++i_;
    std::string out;
    std::size_t count = 0;
    for (;;) {
      skip_space();
      if (braced && peek() == '}') break;
      if (!braced && done()) break;
      if (++count > kMaxMatchers) fail("more than " + std::to_string(kMaxMatchers) + " matchers");
      std::string name = label_name();
      if (name == "__name__") fail("__name__ is chosen by the report; match other labels");
      skip_space();
      std::string op = operator_();
      skip_space();
      std::string value = quoted();
      if (!out.empty()) out += ',';
      out += name + op + '"' + escaped(value) + '"';
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (braced && peek() == '}') break;
      if (!braced && done()) break;
      fail("expected , or " + std::string(braced ? "}" : "the end"));
    }
    if (braced) {
      ++i_;  // the '}'
      skip_space();
    }
    if (!done()) fail("unexpected text after the matchers");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw LabelMatcherError("--match: at byte " + std::to_string(i_ + 1) + ": " + what);
  }
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  void skip_space() {
    while (!done() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  std::string label_name() {
    auto start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
    auto rest = [&](char c) { return start(c) || std::isdigit(static_cast<unsigned char>(c)); };
    if (!start(peek())) fail("expected a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
    std::size_t b = i_;
    while (!done() && rest(s_[i_])) ++i_;
    return std::string(s_.substr(b, i_ - b));
  }

  std::string operator_() {
    for (const char* op : {"=~", "!~", "!=", "="}) {
      std::string_view o(op);
      if (s_.substr(i_, o.size()) == o) {
        i_ += o.size();
        return std::string(o);
      }
    }
    fail("expected =, !=, =~ or !~");
  }

  /// A PromQL string literal; the escapes of double and single quotes, none in backticks.
  std::string quoted() {
    char q = peek();
    if (q != '"' && q != '\'' && q != '`') fail("expected a quoted value");
    ++i_;
    std::string out;
    while (!done() && s_[i_] != q) {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') fail("a control byte in a value");
      if (c != '\\' || q == '`') {
        out += c;
        continue;
      }
      if (done()) break;
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case '\\':
        case '"':
        case '\'':
          out += e;
          break;
        default:
          --i_;
          fail(std::isprint(static_cast<unsigned char>(e)) ? std::string("unknown escape \\") + e
                                                           : "unknown escape");
      }
    }
    if (done()) fail("the quoted value does not end");
    ++i_;
    return out;
  }

  static std::string escaped(const std::string& v) {
    std::string out;
    for (char c : v) {
      if (c == '\\' || c == '"') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else {
        out += c;
      }
    }
    return out;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

std::string parse_label_matchers(std::string_view text) {
  if (text.size() > kMaxMatcherBytes) {
    throw LabelMatcherError("--match: longer than " + std::to_string(kMaxMatcherBytes) + " bytes");
  }
  return Parser(text).parse();
}

}  // namespace loadwatch::report
