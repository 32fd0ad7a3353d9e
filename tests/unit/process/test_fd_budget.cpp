// One budget for every fd kept between samples (registry handles, the tcp collector's
// /proc/PID/fd directories), sized from RLIMIT_NOFILE; past it, the same results without
// kept fds.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>

#include "process/fd_budget.h"
#include "process/process_registry.h"
#include "process/socket_owners.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;

namespace {

/// Sets the soft RLIMIT_NOFILE for the scope of the object.
struct SoftNofile {
  struct rlimit saved {};
  explicit SoftNofile(rlim_t soft) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    struct rlimit rl = saved;
    rl.rlim_cur = std::min(soft, saved.rlim_max);
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &rl) == 0);
  }
  ~SoftNofile() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

/// A listening TCP socket on 127.0.0.1 and its inode.
struct Listener {
  int fd = -1;
  std::uint64_t inode = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 1) == 0);
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    inode = st.st_ino;
  }
  ~Listener() { ::close(fd); }
};

}  // namespace

TEST_CASE("the budget is half of the soft RLIMIT_NOFILE less a reserve, 0 at ulimit -n 128") {
  {
    SoftNofile limit(128);
    FdBudget b;
    CHECK(b.limit() == 0);
    CHECK_FALSE(b.take());
    CHECK(b.used() == 0);
  }
  {
    SoftNofile limit(1024);
    FdBudget b;
    CHECK(b.limit() == (1024 - FdBudget::kReservedFds) / 2);
    // It follows the limit: lowered while fds are kept, new ones are refused.
    for (int i = 0; i < 10; ++i) REQUIRE(b.take());
    SoftNofile lower(128);
    b.refresh();
    CHECK(b.limit() == 0);
    CHECK_FALSE(b.take());
    CHECK(b.used() == 10);
    for (int i = 0; i < 10; ++i) b.give();
    CHECK(b.used() == 0);
  }
}

TEST_CASE("the registry keeps at most its budget and reads the same without it") {
  const FsRoot proc(fixture_path("targets/proc"));
  auto read_all = [&](FdBudget& budget) {
    ProcessRegistry reg(proc, budget);
    reg.begin_sample();
    std::vector<std::uint64_t> seen;
    for (pid_t pid : {100, 101, 103, 200, 300}) {
      ProcessRecord* rec = reg.member(pid);
      REQUIRE(rec);
      seen.push_back(rec->stat.utime + rec->open_fds.value_or(0) * 1000 +
                     rec->status.voluntary_ctxt_switches);
    }
    CHECK(budget.used() <= budget.limit());
    CHECK(static_cast<long>(reg.fds_kept()) == budget.used());
    reg.end_sample();
    return seen;
  };
  FdBudget none(0), three(3), plenty(1000);
  const auto a = read_all(none);
  CHECK(none.used() == 0);
  const auto b = read_all(three);
  const auto c = read_all(plenty);
  CHECK(a == b);
  CHECK(a == c);
  CHECK(three.used() == 0);  // given back when the registry went away
  CHECK(plenty.used() == 0);
}

TEST_CASE("socket owners keep /proc/PID/fd directories inside the budget") {
  Listener l;
  const FsRoot proc("/proc");
  const std::vector<pid_t> pids = {::getpid()};
  const std::vector<std::uint64_t> alive = {l.inode};
  for (long limit : {0L, 1L}) {
    CAPTURE(limit);
    FdBudget budget(limit);
    {
      SocketOwners owners(budget);
      owners.update(proc, pids, alive);
      std::vector<std::uint64_t> inodes;
      owners.tcp_inodes(::getpid(), inodes);
      CHECK(inodes == alive);  // found either way
      CHECK(budget.used() == limit);
      owners.update(proc, {}, alive);  // the process left the targets: its fd is given back
      CHECK(budget.used() == 0);
      owners.update(proc, pids, alive);
      CHECK(budget.used() == limit);
    }
    CHECK(budget.used() == 0);  // and all of them when the owners go away
  }
}
