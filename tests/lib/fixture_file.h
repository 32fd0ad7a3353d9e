#pragma once
// Test helper: the bytes of a committed fixture file.

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/lib/build_paths.h"

namespace loadwatch::test {

/// The whole of tests/fixtures/REL, read as bytes; fails the test case when it cannot be read.
inline std::string read_fixture(const std::string& rel) {
  std::ifstream in(fixture_path(rel), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace loadwatch::test
