#include "tests/lib/build_paths.h"

namespace loadwatch::test {

std::string fixture_path(std::string_view rel) {
  std::string path = LOADWATCH_FIXTURES;
  if (!rel.empty()) path.append("/").append(rel);
  return path;
}

std::string loadwatch_binary() { return LOADWATCH_BINARY; }

std::string source_dir() { return LOADWATCH_SOURCE_DIR; }

}  // namespace loadwatch::test
