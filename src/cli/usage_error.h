#pragma once
// A bad command line or input: a message on stderr and exit code 2. Apart from cli_common.h for
// the files without a command line of their own.

#include <iostream>
#include <string>

namespace loadwatch::analysis {

inline constexpr int kExitBadInput = 2;

/// Prints `message` to stderr and returns kExitBadInput.
inline int usage_error(const std::string& message) {
  std::cerr << "loadwatch: " << message << "\n";
  return kExitBadInput;
}

}  // namespace loadwatch::analysis
