// The bench servers' command line: "key=value" words, in any order.
#pragma once

#include <string>

/// argv "key=value" → value of `key`, or "".
inline std::string bench_str(int argc, char** argv, const std::string& key) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind(key + "=", 0) == 0) return a.substr(key.size() + 1);
  }
  return "";
}

/// argv "key=value" → the number `value` of `key`, or `fallback`.
inline long bench_arg(int argc, char** argv, const std::string& key, long fallback) {
  const std::string value = bench_str(argc, argv, key);
  return value.empty() ? fallback : std::stol(value);
}
