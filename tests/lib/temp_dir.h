#pragma once
// A scratch directory for a test, removed with everything in it when the object goes away.

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace loadwatch::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/lw-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The path of `name` inside, as a string.
  std::string operator/(const char* name) const { return (path / name).string(); }
};

}  // namespace loadwatch::test
