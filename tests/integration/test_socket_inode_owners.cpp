// SocketInodeOwners against the live /proc: the owner of a real listening socket of this
// process is found by its inode, rechecked without searching, forgotten once closed, and an
// inode whose holder is unknown is not searched again before kRetryUpdates.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "process/socket_inode_owners.h"

using namespace loadwatch;

namespace {

std::uint64_t listening_socket(int& fd) {
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st.st_ino;
}

std::string own_comm() {
  std::ifstream f("/proc/self/comm");
  std::string comm;
  std::getline(f, comm);
  return comm;
}

}  // namespace

TEST_CASE("socket inode owners: found, verified, forgotten, retried later", "[process]") {
  const FsRoot proc("/proc");
  SocketInodeOwners owners;
  int fd = -1;
  const std::uint64_t inode = listening_socket(fd);

  owners.update(proc, {inode, 0});
  CHECK(owners.searches() == 1);
  CHECK(owners.comm(inode) == own_comm());
  CHECK_FALSE(owners.comm(inode).empty());

  // Re-verified by one readlink every kRecheckUpdates updates, never searched again.
  for (std::uint32_t i = 0; i < 3 * SocketInodeOwners::kRecheckUpdates; ++i) {
    owners.update(proc, {inode});
  }
  CHECK(owners.searches() == 1);
  CHECK(owners.comm(inode) == own_comm());

  ::close(fd);
  // The link is gone: the next recheck searches anew and finds no holder.
  std::uint32_t n = 0;
  while (owners.searches() == 1 && n < SocketInodeOwners::kRecheckUpdates) {
    owners.update(proc, {inode});
    ++n;
  }
  CHECK(n <= SocketInodeOwners::kRecheckUpdates);
  CHECK(owners.searches() == 2);
  CHECK(owners.comm(inode).empty());
  for (std::uint32_t i = 1; i < SocketInodeOwners::kRetryUpdates; ++i) {
    owners.update(proc, {inode});
  }
  CHECK(owners.searches() == 2);  // not found lately: waits
  owners.update(proc, {inode});
  CHECK(owners.searches() == 3);

  CHECK(owners.comm(12345).empty());  // never asked for
}
