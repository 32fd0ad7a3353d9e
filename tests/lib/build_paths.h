#pragma once
// Where this build's source tree, fixtures and daemon are. Only build_paths.cpp is compiled
// with the paths (tests/CMakeLists.txt): a test file's compile then names no checkout, so a
// compiler cache kept between checkouts serves it (docs/development.md).

#include <string>
#include <string_view>

namespace loadwatch::test {

/// tests/fixtures/REL in the source tree ("" for the folder itself).
std::string fixture_path(std::string_view rel);
/// The loadwatch binary this tree built.
std::string loadwatch_binary();
/// The source tree's root.
std::string source_dir();

}  // namespace loadwatch::test
