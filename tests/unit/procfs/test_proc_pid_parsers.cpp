// Parsers of the per-process /proc files, on literals and on files captured from this
// machine (tests/fixtures/proc/<pid>, see tests/fixtures/capture-process.sh).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "procfs/fs_root.h"
#include "procfs/proc_boot_time.h"
#include "procfs/proc_net_tcp_listen.h"
#include "procfs/proc_pid_io.h"
#include "procfs/proc_pid_limits.h"
#include "procfs/proc_pid_schedstat.h"
#include "procfs/proc_pid_stat.h"
#include "procfs/proc_pid_statm.h"
#include "procfs/proc_pid_status.h"
#include "tests/lib/build_paths.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;

namespace {
std::string fixture(const std::string& rel) {
  return FsRoot(fixture_path("proc")).read_or_throw(rel);
}
}  // namespace

TEST_CASE("stat: comm with blanks and ')' is taken up to the last ')'", "[stat]") {
  // Captured: /bin/sleep exec'd through a symlink named "a b) c".
  auto st = parse_pid_stat(fixture("19770/stat"));
  REQUIRE(st);
  CHECK(st->pid == 19770);
  CHECK(st->comm == "a b) c");
  CHECK(st->state == 'S');
  CHECK(st->ppid == 19765);
  CHECK(st->minflt == 132);
  CHECK(st->majflt == 0);
  CHECK(st->utime == 0);
  CHECK(st->stime == 0);
  CHECK(st->num_threads == 1);
  CHECK(st->starttime == 100006);
  CHECK(st->vsize == 2990080);
  CHECK(st->rss == 418);
  CHECK(st->startstack == 140733694201712ULL);
  CHECK(st->arg_start == 140733694208406ULL);
  CHECK_FALSE(st->exited());
}

TEST_CASE("stat: a multi-threaded python3", "[stat]") {
  auto st = parse_pid_stat(fixture("19771/stat"));
  REQUIRE(st);
  CHECK(st->comm == "python3");
  CHECK(st->minflt == 2952);
  CHECK(st->majflt == 0);
  CHECK(st->utime == 8);
  CHECK(st->stime == 8);
  CHECK(st->num_threads == 5);
  CHECK(st->starttime == 100007);
  CHECK(st->vsize == 319037440);
  CHECK(st->rss == 3382);
  CHECK(st->exec_signature() != 0);
}

TEST_CASE("stat: a zombie has exited, a kernel thread has no mm", "[stat]") {
  auto z = parse_pid_stat(fixture("19886/stat"));
  REQUIRE(z);
  CHECK(z->state == 'Z');
  CHECK(z->ppid == 19771);
  CHECK(z->exited());
  CHECK(z->rss == 0);
  CHECK(z->vsize == 0);
  CHECK(z->exec_signature() == 0);

  auto k = parse_pid_stat(fixture("2/stat"));
  REQUIRE(k);
  CHECK(k->comm == "kthreadd");
  CHECK(k->ppid == 0);
  CHECK(k->starttime == 21);
  CHECK_FALSE(k->exited());
  CHECK(k->nice == 0);
}

TEST_CASE("stat: the nice value (field 19)", "[stat]") {
  // Captured from `nice -n 19 sleep 300`: priority 39, nice 19.
  auto st = parse_pid_stat(
      "15758 (sleep) S 15755 15755 3589 0 -1 4194304 219 0 1 0 0 0 0 0 39 19 1 0 2523567 "
      "2990080 417 18446744073709551615 94519755993088 94519756011017 140728230474752 0 0 0 0 "
      "6 0 1 0 0 17 0 0 0 0 0 0 94519756025104 94519756026368 94520117321728 140728230476222 "
      "140728230476232 140728230476232 140728230477801 0\n");
  REQUIRE(st);
  CHECK(st->nice == 19);
  CHECK(st->num_threads == 1);
  CHECK(parse_pid_stat(fixture("19771/stat"))->nice == 0);
  // The most favoured value a root process may take.
  auto fav = parse_pid_stat("7 (x) R 1 7 7 0 -1 0 5 0 6 0 11 12 0 0 0 -20 3 0 99 1000 7\n");
  REQUIRE(fav);
  CHECK(fav->nice == -20);
}

TEST_CASE("stat: literals", "[stat]") {
  SECTION("comm that is only ')' and '('") {
    auto st = parse_pid_stat("7 ()(() R 1 7 7 0 -1 0 5 0 6 0 11 12 0 0 20 0 3 0 99 1000 7\n");
    REQUIRE(st);
    CHECK(st->comm == ")((");
    CHECK(st->state == 'R');
    CHECK(st->minflt == 5);
    CHECK(st->majflt == 6);
    CHECK(st->utime == 11);
    CHECK(st->stime == 12);
    CHECK(st->num_threads == 3);
    CHECK(st->starttime == 99);
    CHECK(st->vsize == 1000);
    CHECK(st->rss == 7);
    CHECK(st->arg_start == 0);  // an old kernel's shorter line
  }
  SECTION("leader exited while other threads run: Z but not exited") {
    auto st = parse_pid_stat("7 (java) Z 1 7 7 0 -1 0 5 0 6 0 11 12 0 0 20 0 40 0 99 1000 7\n");
    REQUIRE(st);
    CHECK_FALSE(st->exited());
  }
  SECTION("malformed") {
    CHECK_FALSE(parse_pid_stat(""));
    CHECK_FALSE(parse_pid_stat("garbage"));
    CHECK_FALSE(parse_pid_stat("12 (x"));
    CHECK_FALSE(parse_pid_stat("x (sh) S 1 2 3"));
    CHECK_FALSE(parse_pid_stat("12 (sh) S 1 2 3"));  // truncated before rss
    CHECK_FALSE(parse_pid_stat("12 (sh) S 1 2 3 4 5 6 x 8 9 10 11 12 13 14 15 16 17 18 19 20 21"));
    CHECK_FALSE(parse_pid_stat("12 (sh) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21"));
  }
}

TEST_CASE("status: memory and context switches", "[status]") {
  auto s = parse_pid_status(fixture("19771/status"));
  REQUIRE(s.vm_rss_bytes);
  CHECK(*s.vm_rss_bytes == 13636 * 1024);
  CHECK(*s.vm_hwm_bytes == 13636 * 1024);
  CHECK(*s.vm_swap_bytes == 0);
  CHECK(s.voluntary_ctxt_switches == 30);
  CHECK(s.nonvoluntary_ctxt_switches == 50);

  // stat's rss is an approximate read of the per-CPU RSS counters (get_mm_counter);
  // status's VmRSS is their precise sum: in this capture they differ by 27 pages. That is
  // why the collector takes VmRSS.
  auto st = parse_pid_stat(fixture("19771/stat"));
  CHECK(static_cast<std::uint64_t>(st->rss) * 4096 == 13852672);
  CHECK(*s.vm_rss_bytes == 13963264);

  auto z = parse_pid_status(fixture("19886/status"));
  CHECK_FALSE(z.vm_rss_bytes);
  CHECK_FALSE(z.vm_swap_bytes);
  CHECK(z.voluntary_ctxt_switches == 1);
  CHECK(z.nonvoluntary_ctxt_switches == 5);

  auto k = parse_pid_status(fixture("2/status"));
  CHECK_FALSE(k.vm_rss_bytes);
  CHECK(k.voluntary_ctxt_switches == 63);
}

TEST_CASE("status: literals", "[status]") {
  auto s = parse_pid_status(
      "Name:\tx\nVmRSS:\t  2048 kB\nVmSwap:\t12 kB\n"
      "voluntary_ctxt_switches:\t18446744073709551615\n"
      "nonvoluntary_ctxt_switches:\tbad\nVmHWM:\n");
  CHECK(*s.vm_rss_bytes == 2048 * 1024);
  CHECK(*s.vm_swap_bytes == 12 * 1024);
  CHECK(s.voluntary_ctxt_switches == 18446744073709551615ULL);
  CHECK(s.nonvoluntary_ctxt_switches == 0);
  CHECK_FALSE(s.vm_hwm_bytes);
  auto empty = parse_pid_status("");
  CHECK_FALSE(empty.vm_rss_bytes);
}

TEST_CASE("io: storage bytes", "[io]") {
  auto io = parse_pid_io(fixture("19771/io"));
  REQUIRE(io);
  CHECK(io->read_bytes == 0);
  CHECK(io->write_bytes == 4096);
  CHECK(io->rchar == 1685836);
  CHECK(io->wchar == 1701);
  CHECK(io->cancelled_write_bytes == 0);
}

TEST_CASE("io: literals", "[io]") {
  auto io = parse_pid_io(
      "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\n"
      "write_bytes: 6\ncancelled_write_bytes: 7\n");
  REQUIRE(io);
  CHECK(io->rchar == 1);
  CHECK(io->wchar == 2);
  CHECK(io->read_bytes == 5);
  CHECK(io->write_bytes == 6);
  CHECK(io->cancelled_write_bytes == 7);
  // Without CONFIG_TASK_IO_ACCOUNTING only the char counters are printed.
  CHECK_FALSE(parse_pid_io("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\n"));
  CHECK_FALSE(parse_pid_io(""));
}

TEST_CASE("schedstat: time on a CPU, time waiting, times run", "[schedstat]") {
  // Captured from PID 1 of this machine (Linux 6.18).
  auto s = parse_pid_schedstat("216304815 33615924 621\n");
  REQUIRE(s);
  CHECK(s->run_ns == 216304815);
  CHECK(s->wait_ns == 33615924);
  CHECK(s->timeslices == 621);
  CHECK(*s == PidSchedstat{216304815, 33615924, 621});
  CHECK_FALSE(*s == PidSchedstat{216304815, 33615924, 622});
  // A live task has run at least once: "0 0 0" is a kernel keeping no figures.
  CHECK_FALSE(parse_pid_schedstat("0 0 0\n"));
  CHECK_FALSE(parse_pid_schedstat(""));
  CHECK_FALSE(parse_pid_schedstat("1 2\n"));
  CHECK_FALSE(parse_pid_schedstat("1 2 3 4\n"));
  CHECK_FALSE(parse_pid_schedstat("1 -2 3\n"));
  CHECK_FALSE(parse_pid_schedstat("1 2 99999999999999999999999\n"));
  // This process's own file parses (it exists on every kernel with CONFIG_SCHED_INFO).
  std::string self;
  if (FsRoot("/proc").read("self/schedstat", self) == 0) CHECK(parse_pid_schedstat(self));
}

TEST_CASE("statm: resident pages", "[statm]") {
  // Captured from a sleeping `sleep` (its status said VmRSS: 1844 kB, 461 pages of 4 KiB).
  CHECK(parse_pid_statm_resident("730 461 433 5 0 89 0\n") == 461u);
  // A process without memory (a zombie, a kernel thread).
  CHECK(parse_pid_statm_resident("0 0 0 0 0 0 0\n") == 0u);
  CHECK_FALSE(parse_pid_statm_resident(""));
  CHECK_FALSE(parse_pid_statm_resident("730 461\n"));
  CHECK_FALSE(parse_pid_statm_resident("730 461 433 5 0 89 0 7\n"));
  CHECK_FALSE(parse_pid_statm_resident("730 -461 433 5 0 89 0\n"));
  CHECK_FALSE(parse_pid_statm_resident("730 99999999999999999999999 433 5 0 89 0\n"));
  std::string self;
  if (FsRoot("/proc").read("self/statm", self) == 0) CHECK(parse_pid_statm_resident(self));
}

TEST_CASE("limits: Max open files", "[limits]") {
  auto l = parse_max_open_files(fixture("19771/limits"));
  REQUIRE(l);
  CHECK(l->soft == 20000);
  CHECK(l->hard == 20000);
  auto k = parse_max_open_files(fixture("2/limits"));
  REQUIRE(k);
  CHECK(k->soft == 1024);
  CHECK(k->hard == 4096);

  auto u = parse_max_open_files(
      "Limit                     Soft Limit           Hard Limit           Units     \n"
      "Max open files            unlimited            unlimited            files     \n");
  REQUIRE(u);
  CHECK(u->soft == OpenFilesLimit::kUnlimited);
  CHECK_FALSE(parse_max_open_files("Max open files            many  1 files\n"));
  CHECK_FALSE(parse_max_open_files("Max processes             1024 1024 processes\n"));
  CHECK_FALSE(parse_max_open_files(""));
}

TEST_CASE("boot time from /proc/stat", "[btime]") {
  auto b = parse_boot_time(fixture("stat"));
  REQUIRE(b);
  CHECK(*b > 1500000000);  // a real capture: after 2017
  CHECK(parse_boot_time("cpu 1 2 3\nbtime 1700000000\nprocesses 5\n") == 1700000000u);
  CHECK_FALSE(parse_boot_time("cpu 1 2 3\n"));
  CHECK_FALSE(parse_boot_time("btime x\n"));
}

TEST_CASE("net/tcp: listeners of a port, IPv4 and IPv6", "[tcp]") {
  const std::string hdr =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n";
  std::vector<std::uint64_t> inodes;
  bool other = parse_tcp_listen_inodes(
      hdr +
          "   0: 0100007F:09DD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
          "        0 5555 1 0000000000000000 100 0 0 10 0\n"
          "   1: 00000000:09DD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
          "        0 5556 1 0000000000000000 100 0 0 10 0\n"
          "   2: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0"
          "        0 5557 1 0000000000000000 100 0 0 10 0\n",
      2525, inodes);
  CHECK_FALSE(other);
  CHECK(inodes == std::vector<std::uint64_t>{5555, 5556});

  inodes.clear();
  other = parse_tcp_listen_inodes(
      "   0: 00000000000000000000000000000000:09DD 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000     0        0 6666 1 0000000000000000 100 0 0 "
      "10 0\n"
      "   1: 0000000000000000FFFF00000100007F:09DD 0000000000000000FFFF00000100007F:D2F0 06 "
      "00000000:00000000 03:00000A1C 00000000     0        0 0 3 0000000000000000\n",
      2525, inodes);
  CHECK(other);  // a TIME_WAIT row: the listeners are over
  CHECK(inodes == std::vector<std::uint64_t>{6666});

  inodes.clear();
  parse_tcp_listen_inodes("garbage\n   0: zz 11 0A\n\n", 2525, inodes);
  CHECK(inodes.empty());
}

TEST_CASE("net/tcp: every LISTEN row of the captured host files is found", "[tcp]") {
  // Cross-check against an independent sscanf reading of the same rows: for each listener
  // of the capture, asking for its port must return its inode.
  for (const char* file : {"net/tcp", "net/tcp6"}) {
    const std::string text = fixture(file);
    std::size_t listeners = 0;
    std::size_t pos = text.find('\n') + 1;  // header
    while (pos < text.size()) {
      std::size_t nl = text.find('\n', pos);
      std::string line = text.substr(pos, nl - pos);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      char local[64], remote[64];
      unsigned st = 0;
      unsigned long long inode = 0;
      if (std::sscanf(line.c_str(), " %*d: %63s %63s %x %*s %*s %*s %*u %*u %llu", local, remote,
                      &st, &inode) != 4 ||
          st != 0x0A) {
        continue;
      }
      ++listeners;
      const char* colon = std::strrchr(local, ':');
      REQUIRE(colon);
      const auto port = static_cast<std::uint16_t>(std::strtoul(colon + 1, nullptr, 16));
      std::vector<std::uint64_t> inodes;
      parse_tcp_listen_inodes(text, port, inodes);
      INFO(file << " port " << port);
      CHECK(std::find(inodes.begin(), inodes.end(), inode) != inodes.end());
    }
    INFO(file);
    CHECK((listeners > 0 || std::string(file) == "net/tcp6"));
  }
}
