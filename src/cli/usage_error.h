#pragma once
// A bad command line or input: a message on stderr and exit code 2. Apart from cli_common.h so
// that a file without a command line of its own does not compile CLI11 (about 9 s of CPU).

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
