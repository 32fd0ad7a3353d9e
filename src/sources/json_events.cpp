#include "sources/json_events.h"

#include <nlohmann/json.hpp>

namespace loadwatch {

namespace {

// nlohmann's SAX interface forwarded to a JsonHandler, with the depth cap and the reason a
// parse stopped.
class Forward final : public nlohmann::json_sax<nlohmann::json> {
 public:
  Forward(JsonHandler& h, std::size_t max_depth) : h_(h), max_depth_(max_depth) {}

  bool null() override { return ok(h_.null()); }
  bool boolean(bool v) override { return ok(h_.boolean(v)); }
  bool number_integer(number_integer_t v) override { return ok(h_.number(static_cast<double>(v))); }
  bool number_unsigned(number_unsigned_t v) override {
    return ok(h_.number(static_cast<double>(v)));
  }
  bool number_float(number_float_t v, const string_t&) override { return ok(h_.number(v)); }
  bool string(string_t& v) override { return ok(h_.string(v)); }
  bool binary(binary_t&) override { return false; }  // not produced by the JSON format
  bool key(string_t& v) override { return ok(h_.key(v)); }
  bool start_object(std::size_t) override { return deeper() && ok(h_.begin_object()); }
  bool end_object() override {
    --depth_;
    return ok(h_.end_object());
  }
  bool start_array(std::size_t) override { return deeper() && ok(h_.begin_array()); }
  bool end_array() override {
    --depth_;
    return ok(h_.end_array());
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string_view what = e.what();
    if (auto close = what.find("] ");
        what.rfind("[json.exception.", 0) == 0 && close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    error = "offset " + std::to_string(position) + ": " + std::string(what);
    return false;
  }

  std::string error;

 private:
  bool ok(bool handler_result) {
    if (!handler_result && error.empty()) error = "stopped by handler";
    return handler_result;
  }
  bool deeper() {
    if (++depth_ <= max_depth_) return true;
    error = "nested too deeply (more than " + std::to_string(max_depth_) + " levels)";
    return false;
  }

  JsonHandler& h_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
};

}  // namespace

bool read_json_events(std::string_view text, JsonHandler& handler, std::string& error,
                      std::size_t max_depth) {
  Forward forward(handler, max_depth);
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &forward,
                                            nlohmann::json::input_format_t::json, /*strict=*/true);
  if (!ok) error = forward.error.empty() ? "invalid JSON" : forward.error;
  return ok;
}

}  // namespace loadwatch
