// ProcessHandle's fd listing against this process's own /proc entry, and the parsers of the
// names and links it hands out.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <vector>

#include "process/process_handle.h"

using namespace loadwatch;

namespace {

struct ProcRoot {
  int fd = ::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ~ProcRoot() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

TEST_CASE("parse_socket_link: the inode of \"socket:[N]\" only", "[process]") {
  std::uint64_t inode = 0;
  CHECK(parse_socket_link("socket:[12345]", inode));
  CHECK(inode == 12345);
  CHECK(parse_socket_link("socket:[18446744073709551615]", inode));
  CHECK(inode == 18446744073709551615ULL);
  for (const char* bad :
       {"", "socket:[", "socket:[]", "socket:[12345", "socket:12345]", "socket:[12a]",
        "socket:[-1]", "socket:[+1]", "socket:[ 1]", "socket:[18446744073709551616]",
        "pipe:[12345]", "anon_inode:[eventfd]", "/tmp/socket:[1]", "socket:[1]x"}) {
    INFO(bad);
    CHECK_FALSE(parse_socket_link(bad, inode));
  }
}

TEST_CASE("parse_pid_name: positive decimal PIDs only", "[process]") {
  pid_t pid = 0;
  CHECK(parse_pid_name("1", pid));
  CHECK(pid == 1);
  CHECK(parse_pid_name("4194304", pid));
  CHECK(pid == 4194304);
  for (const char* bad :
       {"", "0", "-1", "self", "thread-self", "net", "12a", " 12", "+12", "99999999999"}) {
    INFO(bad);
    CHECK_FALSE(parse_pid_name(bad, pid));
  }
}

TEST_CASE("for_each_fd: every fd with its link; a socket's link gives its inode", "[process]") {
  ProcRoot root;
  REQUIRE(root.fd >= 0);
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(s >= 0);
  struct stat st {};
  REQUIRE(::fstat(s, &st) == 0);

  ProcessHandle h(root.fd, ::getpid(), nullptr);  // no budget: nothing kept
  std::uint64_t found = 0;
  int calls = 0;
  const ReadResult r = h.for_each_fd([&](int fd, const std::string& link) {
    ++calls;
    std::uint64_t inode = 0;
    if (fd == s && parse_socket_link(link, inode)) found = inode;
  });
  CHECK(r == ReadResult::Ok);
  CHECK(found == st.st_ino);
  std::uint64_t count = 0;
  CHECK(h.open_fd_count(false, count) == ReadResult::Ok);
  // The listing's own directory fd is open during either call.
  CHECK(static_cast<std::uint64_t>(calls) == count);
  ::close(s);
}

TEST_CASE("for_each_fd: an fd closed during the listing is skipped, the listing is Ok",
          "[process]") {
  ProcRoot root;
  REQUIRE(root.fd >= 0);
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  REQUIRE(p[0] < p[1]);  // listed in fd order: p[1] comes after p[0]
  ProcessHandle h(root.fd, ::getpid(), nullptr);

  SECTION("the next fd is closed before its readlink (ENOENT)") {
    std::vector<int> seen;
    const ReadResult r = h.for_each_fd([&](int fd, const std::string&) {
      seen.push_back(fd);
      if (fd == p[0]) ::close(p[1]);
    });
    CHECK(r == ReadResult::Ok);
    CHECK(std::find(seen.begin(), seen.end(), p[0]) != seen.end());
    CHECK(std::find(seen.begin(), seen.end(), p[1]) == seen.end());
    ::close(p[0]);
  }
  SECTION("the callback leaves errno set (a failed read of its own)") {
    const ReadResult r = h.for_each_fd([&](int fd, const std::string&) {
      if (fd == p[0]) errno = EACCES;
    });
    CHECK(r == ReadResult::Ok);
    ::close(p[0]);
    ::close(p[1]);
  }
}
