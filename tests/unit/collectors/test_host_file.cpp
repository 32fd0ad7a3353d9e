// HostFile against the real /proc: a kept fd gives the text an open gives at the same moment,
// a fixture tree's replaced file is read afresh, the budget is honoured and a file that went
// away reports an error, never old text.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/host_file.h"
#include "process/fd_budget.h"
#include "procfs/fs_root.h"
#include "tests/lib/temp_dir.h"

using namespace loadwatch;

namespace {

const FsRoot kProc("/proc");

/// The number after `key` at the start of a line of /proc/stat ("processes 12345").
std::uint64_t stat_line(const std::string& text, const std::string& key) {
  const auto at = text.find("\n" + key + " ");
  REQUIRE(at != std::string::npos);
  return std::stoull(text.substr(at + key.size() + 2));
}

/// minflt, field 10 of /proc/PID/stat (the 8th after the comm's closing parenthesis).
std::uint64_t minflt(const std::string& text) {
  std::size_t at = text.rfind(')');
  REQUIRE(at != std::string::npos);
  for (int field = 0; field < 8; ++field) {
    at = text.find(' ', at + 1);
    REQUIRE(at != std::string::npos);
  }
  return std::stoull(text.substr(at + 1));
}

std::string fresh(const std::string& relative) {
  std::string out;
  REQUIRE(kProc.read(relative, out) == 0);
  return out;
}

void fork_and_reap() {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  REQUIRE(::waitpid(child, nullptr, 0) == child);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("a kept /proc/stat fd reads what an open reads at the same moment", "[host_file]") {
  FdBudget budget(4);
  HostFile file("stat", &budget);
  std::string kept;
  REQUIRE(file.read(kProc, kept) == 0);
  REQUIRE(file.kept());
  CHECK(budget.used() == 1);
  for (int round = 0; round < 5; ++round) {
    REQUIRE(file.read(kProc, kept) == 0);
    const std::uint64_t before = stat_line(kept, "processes");
    const std::uint64_t opened = stat_line(fresh("stat"), "processes");
    fork_and_reap();  // the host's fork count moves by at least one
    REQUIRE(file.read(kProc, kept) == 0);
    const std::uint64_t after = stat_line(kept, "processes");
    CHECK(before <= opened);
    CHECK(after >= opened + 1);
    CHECK(file.kept());
  }
  CHECK(budget.used() == 1);
}

TEST_CASE("a kept /proc/self/stat fd follows this process's page faults", "[host_file]") {
  FdBudget budget(4);
  HostFile file("self/stat", &budget);
  std::string kept;
  REQUIRE(file.read(kProc, kept) == 0);
  REQUIRE(file.kept());
  constexpr std::size_t kPages = 64;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (int round = 0; round < 3; ++round) {
    REQUIRE(file.read(kProc, kept) == 0);
    const std::uint64_t before = minflt(kept);
    const std::uint64_t opened = minflt(fresh("self/stat"));
    void* mem =
        ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    for (std::size_t i = 0; i < kPages; ++i) static_cast<volatile char*>(mem)[i * page] = 1;
    REQUIRE(file.read(kProc, kept) == 0);
    const std::uint64_t after = minflt(kept);
    ::munmap(mem, kPages * page);
    CHECK(before <= opened);
    CHECK(after >= opened + kPages);  // each first touch of a page is a minor fault
  }
}

TEST_CASE("a fixture tree's file is not kept: a replaced file is read afresh", "[host_file]") {
  test::TempDir dir;
  const FsRoot root(dir.path.string());
  FdBudget budget(4);
  HostFile file("loadavg", &budget);
  std::string text;
  write_file(dir.path / "loadavg", "0.10 0.20 0.30 1/100 42\n");
  REQUIRE(file.read(root, text) == 0);
  CHECK(text == "0.10 0.20 0.30 1/100 42\n");
  CHECK_FALSE(file.kept());
  CHECK(budget.used() == 0);
  // Replaced by a rename, as a capture script or an atomic writer does.
  write_file(dir.path / "loadavg.new", "9.00 8.00 7.00 2/200 43\n");
  std::filesystem::rename(dir.path / "loadavg.new", dir.path / "loadavg");
  REQUIRE(file.read(root, text) == 0);
  CHECK(text == "9.00 8.00 7.00 2/200 43\n");
  std::filesystem::remove(dir.path / "loadavg");
  CHECK(file.read(root, text) == ENOENT);
  CHECK(text.empty());
}

TEST_CASE("another root than the kept fd's is opened, and the budget given back", "[host_file]") {
  test::TempDir dir;
  const FsRoot fixture(dir.path.string());
  write_file(dir.path / "loadavg", "1.00 1.00 1.00 1/1 1\n");
  FdBudget budget(4);
  HostFile file("loadavg", &budget);
  std::string text;
  REQUIRE(file.read(kProc, text) == 0);
  REQUIRE(file.kept());
  REQUIRE(file.read(fixture, text) == 0);
  CHECK(text == "1.00 1.00 1.00 1/1 1\n");
  CHECK_FALSE(file.kept());
  CHECK(budget.used() == 0);
}

TEST_CASE("past the kept-fd budget a host file is read by path, the same text", "[host_file]") {
  FdBudget none(0);
  HostFile file("sys/kernel/pid_max", &none);
  std::string text;
  REQUIRE(file.read(kProc, text) == 0);
  CHECK_FALSE(file.kept());
  CHECK(text == fresh("sys/kernel/pid_max"));
  REQUIRE(file.read(kProc, text) == 0);
  CHECK(text == fresh("sys/kernel/pid_max"));
  CHECK(none.used() == 0);
}

TEST_CASE("a kept file that went away reports the open's error, not old text", "[host_file]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  FdBudget budget(4);
  std::string text;
  {
    HostFile file(std::to_string(child) + "/stat", &budget);
    REQUIRE(file.read(kProc, text) == 0);
    CHECK(text.rfind(std::to_string(child) + " (", 0) == 0);
    REQUIRE(file.kept());
    ::kill(child, SIGKILL);
    REQUIRE(::waitpid(child, nullptr, 0) == child);
    // The kept fd fails (the task is gone); the path is opened once more and is gone too.
    CHECK(file.read(kProc, text) != 0);
    CHECK(text.empty());
    CHECK_FALSE(file.kept());
    CHECK(budget.used() == 0);
  }
  // A file kept until its owner goes gives its fd back.
  {
    HostFile file("uptime", &budget);
    REQUIRE(file.read(kProc, text) == 0);
    CHECK(budget.used() == 1);
  }
  CHECK(budget.used() == 0);
}
