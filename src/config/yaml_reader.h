#pragma once
// What the YAML parsers (config, web config) share: errors that say where, "file:line:col".

#include <yaml-cpp/yaml.h>

#include <string>

namespace loadwatch {

/// Base of a parser for one YAML document. Its checks throw ConfigError naming the place in
/// the file; yaml-cpp marks are 0-based, we print 1-based as editors do.
class YamlReader {
 protected:
  /// `file` names the document in errors; `unnamed` stands in when it is empty ("<config>").
  YamlReader(std::string file, std::string unnamed)
      : file_(std::move(file)), unnamed_(std::move(unnamed)) {}

  const std::string& file() const { return file_; }

  /// Parses one YAML document, and refuses what yaml-cpp lets through silently: a key that
  /// appears twice in one mapping (yaml-cpp keeps the first), a key that is not a scalar,
  /// and a second document after `---` (YAML::Load reads only the first). Throws ConfigError.
  YAML::Node load(const std::string& text) const;

  /// Throws ConfigError "file:line:col: message" ("file: message" when `mark` is null).
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;

  void expect_map(const YAML::Node& node, const std::string& what) const;

  /// A YAML boolean (true/false, yes/no, on/off as yaml-cpp decodes them).
  bool boolean(const YAML::Node& node, const std::string& what) const;

 private:
  std::string file_;
  std::string unnamed_;
};

}  // namespace loadwatch
