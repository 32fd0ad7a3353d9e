// The one reader of files from outside /proc: open first, check the open fd, read to a cap.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/lib/temp_dir.h"
#include "util/bounded_file.h"

using namespace loadwatch;
namespace fs = std::filesystem;
using loadwatch::test::TempDir;

TEST_CASE("a regular file is read whole, up to and including the cap") {
  TempDir d;
  std::ofstream(d / "f") << "12345";
  std::string out;
  CHECK(read_bounded_file(d / "f", 5, out) == 0);
  CHECK(out == "12345");
  CHECK(read_bounded_file(d / "f", 100, out) == 0);
  CHECK(out == "12345");
  std::string error;
  CHECK(read_bounded_file(d / "f", 4, out, &error) == EFBIG);
  CHECK(out.empty());
  CHECK(error == d / "f" + ": is larger than 4 bytes");
  std::ofstream(d / "empty").flush();
  CHECK(read_bounded_file(d / "empty", 4, out) == 0);
  CHECK(out.empty());
}

TEST_CASE("what is not a regular file is refused without blocking or reading it") {
  TempDir d;
  std::string out, error;
  CHECK(read_bounded_file(d / "missing", 10, out, &error) == ENOENT);
  CHECK(error == d / "missing" + ": No such file or directory");
  CHECK(read_bounded_file(d.path.string(), 10, out, &error) == EISDIR);
  CHECK(error == d.path.string() + ": is a directory, not a regular file");

  // A FIFO without a writer would block a plain open(); with a writer, a read.
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  auto start = std::chrono::steady_clock::now();
  CHECK(read_bounded_file(d / "fifo", 10, out, &error) == EINVAL);
  CHECK(error == d / "fifo" + ": is a FIFO, not a regular file");
  int writer_side =
      ::open((d / "fifo").c_str(), O_RDWR | O_NONBLOCK);  // a writer that never writes
  REQUIRE(writer_side >= 0);
  CHECK(read_bounded_file(d / "fifo", 10, out) == EINVAL);
  ::close(writer_side);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));

  // /dev/zero behind a symlink: followed, then refused as a device, never read.
  fs::create_symlink("/dev/zero", d / "zero");
  CHECK(read_bounded_file(d / "zero", 1 << 30, out, &error) == EINVAL);
  CHECK(error == d / "zero" + ": is a character device, not a regular file");
  CHECK(read_bounded_file("/dev/null", 10, out, &error) == EINVAL);
}

TEST_CASE("Symlinks::Refuse does not follow a symlink, even to a regular file") {
  TempDir d;
  std::ofstream(d / "real") << "x";
  fs::create_symlink(d / "real", d / "link");
  std::string out, error;
  CHECK(read_bounded_file(d / "link", 10, out, nullptr, Symlinks::Follow) == 0);
  CHECK(out == "x");
  CHECK(read_bounded_file(d / "link", 10, out, &error, Symlinks::Refuse) == ELOOP);
  CHECK(error == d / "link" + ": is a symlink, which is not followed here");
  CHECK(read_bounded_file(d / "real", 10, out, nullptr, Symlinks::Refuse) == 0);
}

TEST_CASE("BoundedFile gives the open fd's status before reading") {
  TempDir d;
  std::ofstream(d / "f") << "abc";
  BoundedFile f(d / "f", Symlinks::Refuse);
  REQUIRE(f.error() == 0);
  CHECK(f.status().st_size == 3);
  // Replaced after the open: the open fd still reads the file that was checked.
  std::ofstream(d / "g") << "replacement";
  fs::rename(d / "g", d / "f");
  std::string out;
  CHECK(f.read(100, out) == 0);
  CHECK(out == "abc");
}
