#include "yaml_reader.h"

#include "config_error.h"

namespace loadwatch {

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
