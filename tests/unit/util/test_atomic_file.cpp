// write_file_atomically: the whole new file or the old one, with the mode asked for, and no
// temporary file left behind whether it succeeds or fails.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/lib/temp_dir.h"
#include "util/atomic_file.h"

using namespace loadwatch;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("a file is written whole, replaced whole, with its mode, and no temporary left") {
  test::TempDir dir;
  mode_t old_umask = ::umask(022);
  write_file_atomically(dir.path, "a.json", "first", 0640);
  write_file_atomically(dir.path, "b.json", "", 0644);
  ::umask(old_umask);
  CHECK(slurp(dir / "a.json") == "first");
  CHECK(mode_of(dir / "a.json") == 0640);
  CHECK(mode_of(dir / "b.json") == 0644);
  CHECK(fs::file_size(dir / "b.json") == 0);

  write_file_atomically(dir.path, "a.json", std::string(100000, 'x'), 0640);
  CHECK(slurp(dir / "a.json") == std::string(100000, 'x'));
  CHECK(entries(dir.path) == 2);
}

TEST_CASE("a write that fails throws with the path and the cause, and removes its temporary") {
  test::TempDir dir;
  CHECK_THROWS_WITH(write_file_atomically(dir / "missing", "a.json", "x", 0640),
                    Catch::Contains(dir / "missing") && Catch::Contains("No such file"));

  // The rename fails: the name is taken by a directory that is not empty.
  fs::create_directories(dir.path / "taken.json" / "inside");
  CHECK_THROWS_WITH(write_file_atomically(dir.path, "taken.json", "x", 0640),
                    Catch::Contains("cannot rename") && Catch::Contains("taken.json"));
  CHECK(entries(dir.path) == 1);
  CHECK(fs::is_directory(dir.path / "taken.json" / "inside"));
}

TEST_CASE("the temporary file of an unfinished write is told from the daemon's other files") {
  CHECK(is_atomic_write_leftover(".20261201T000000-x.json.tmp"));
  CHECK(is_atomic_write_leftover(".a.tmp"));
  CHECK_FALSE(is_atomic_write_leftover("20261201T000000-x.json"));
  CHECK_FALSE(is_atomic_write_leftover("x.json.tmp"));  // not one of ours: no leading dot
  CHECK_FALSE(is_atomic_write_leftover(".probe"));
  CHECK_FALSE(is_atomic_write_leftover(".tmp"));
}
