#pragma once
// The error of the YAML parsers (config, web config), apart so that the shared YAML reader does
// not depend on the config it helps parse.

#include <stdexcept>

namespace loadwatch {

/// A config error that names where it is: "file:line:col: message".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace loadwatch
