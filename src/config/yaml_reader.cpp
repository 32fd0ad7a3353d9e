#include "config/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "config/config_error.h"

namespace loadwatch {

namespace {

/// Walks the parser's events (aliases are not expanded, so an "aliases of aliases" document
/// costs its size, not its expansion) and reports the first duplicate or non-scalar key.
class KeyChecker final : public YAML::EventHandler {
 public:
  struct Problem {
    YAML::Mark mark;
    std::string message;
  };
  std::optional<Problem> problem;
  YAML::Mark start = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark, nullptr);
    frames_.push_back(Frame{false, true, {}});
  }
  void OnSequenceEnd() override { frames_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark, nullptr);
    frames_.push_back(Frame{true, true, {}});
  }
  void OnMapEnd() override { frames_.pop_back(); }

 private:
  struct Frame {
    bool map;
    bool next_is_key;
    std::set<std::string> keys;
  };

  /// Any node: when it is a key of the innermost mapping, `scalar` is its text (nullptr when
  /// the key is not a scalar).
  void node(const YAML::Mark& mark, const std::string* scalar) {
    if (frames_.empty() || !frames_.back().map) return;
    Frame& f = frames_.back();
    const bool is_key = f.next_is_key;
    f.next_is_key = !f.next_is_key;
    if (!is_key || problem) return;
    if (!scalar) {
      problem = Problem{mark, "a mapping key must be a plain string"};
    } else if (!f.keys.insert(*scalar).second) {
      problem = Problem{mark, "duplicate key \"" + *scalar + "\""};
    }
  }

  std::vector<Frame> frames_;
};

}  // namespace

YAML::Node YamlReader::load(const std::string& text) const {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    KeyChecker checker;
    const bool any = parser.HandleNextDocument(checker);
    if (checker.problem) fail(checker.problem->mark, checker.problem->message);
    if (any) {
      KeyChecker rest;
      if (parser.HandleNextDocument(rest)) {
        fail(rest.start, "a second YAML document; one file holds one document");
      }
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(e.mark, e.msg);
  }
}

void YamlReader::fail(const YAML::Mark& mark, const std::string& message) const {
  std::string where = file_.empty() ? unnamed_ : file_;
  if (!mark.is_null()) {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on ":" + std::string here.
    where.append(":").append(std::to_string(mark.line + 1));
    where.append(":").append(std::to_string(mark.column + 1));
  }
  throw ConfigError(where + ": " + message);
}

void YamlReader::expect_map(const YAML::Node& node, const std::string& what) const {
  if (!node.IsMap()) fail(node.Mark(), what + " must be a mapping");
}

bool YamlReader::boolean(const YAML::Node& node, const std::string& what) const {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    fail(node.Mark(), what + " must be true or false");
  }
  return value;
}

}  // namespace loadwatch
