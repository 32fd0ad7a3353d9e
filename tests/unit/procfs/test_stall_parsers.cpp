// Pressure stall information, vmstat's swap counters and a cgroup's cpu.stat: real captures
// from a 2-CPU Linux 6.18 machine (tests/fixtures/proc/pressure, proc/vmstat, and the cpu.stat
// of a v1 cgroup under a 0.2-core quota that a busy loop ran in for 1.5 s), then other kernels'
// layouts and malformed input.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "procfs/cgroup_cpu_stat.h"
#include "procfs/cpu_limit.h"
#include "procfs/pressure.h"
#include "procfs/vmstat.h"
#include "tests/lib/build_paths.h"
#include "tests/lib/fixture_file.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
using loadwatch::test::read_fixture;

TEST_CASE("PSI files give their some and full totals in microseconds") {
  Pressure cpu = parse_pressure(read_fixture("proc/pressure/cpu"));
  REQUIRE(cpu.some_total_us);
  CHECK(*cpu.some_total_us == 89890902u);
  CHECK(cpu.full_total_us == 0u);  // host-wide cpu "full" is always 0
  Pressure mem = parse_pressure(read_fixture("proc/pressure/memory"));
  REQUIRE(mem.some_total_us);
  REQUIRE(mem.full_total_us);
  CHECK(*mem.some_total_us >= *mem.full_total_us);  // full is a part of some
  CHECK(parse_pressure(read_fixture("proc/pressure/io")).some_total_us);

  // Before Linux 5.13 the cpu file has no "full" line: absent, not 0.
  Pressure old = parse_pressure("some avg10=1.00 avg60=0.50 avg300=0.10 total=1234\n");
  CHECK(old.some_total_us == 1234u);
  CHECK_FALSE(old.full_total_us);

  CHECK_THROWS_AS(parse_pressure(""), std::runtime_error);
  CHECK_THROWS_AS(parse_pressure("some avg10=1.00 avg60=0.50\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_pressure("some total=-5\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_pressure("most total=5\n"), std::runtime_error);
}

TEST_CASE("vmstat gives the swap page counters and nothing else") {
  VmSwapCounters c = parse_vmstat_swap(read_fixture("proc/vmstat"));
  CHECK(c.pswpin == 0u);  // the capture's machine has no swap
  CHECK(c.pswpout == 0u);
  VmSwapCounters some = parse_vmstat_swap("nr_free_pages 12\npswpin 17\npswpout 4096\n");
  CHECK(some.pswpin == 17u);
  CHECK(some.pswpout == 4096u);
  CHECK_FALSE(parse_vmstat_swap("nr_free_pages 12\n").pswpin);
  CHECK_THROWS_AS(parse_vmstat_swap("pswpin x\n"), std::runtime_error);
}

TEST_CASE("cpu.stat gives the bandwidth counters of v1 and v2 in seconds") {
  auto v1 = parse_cgroup_cpu_stat(read_fixture("sys/fs/cgroup/cpu/app/cpu.stat"));
  REQUIRE(v1);
  CHECK(v1->periods == 16u);
  CHECK(v1->throttled_periods == 14u);
  CHECK(v1->throttled_seconds == Approx(0.327767464));  // throttled_time is in ns

  auto v2 = parse_cgroup_cpu_stat(
      "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 40\nnr_throttled 7\n"
      "throttled_usec 250000\nnr_bursts 0\nburst_usec 0\n");
  REQUIRE(v2);
  CHECK(v2->periods == 40u);
  CHECK(v2->throttled_periods == 7u);
  CHECK(v2->throttled_seconds == Approx(0.25));

  // A v2 cgroup without the cpu controller (the captured root of the unified hierarchy).
  CHECK_FALSE(parse_cgroup_cpu_stat(read_fixture("sys/fs/cgroup/unified/cpu.stat")));
  CHECK_THROWS_AS(parse_cgroup_cpu_stat("nr_periods 4\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_cgroup_cpu_stat("nr_periods 4\nnr_throttled x\nthrottled_usec 1\n"),
                  std::runtime_error);
}

TEST_CASE("the cgroup whose quota binds a process is found with its directory") {
  FsRoot sys(fixture_path("sys"));
  auto q = cgroup_text_quota("2:cpuacct:/\n1:cpu:/app\n0::/\n", sys);
  REQUIRE(q);
  CHECK(q->cores == Approx(0.2));
  CHECK(q->dir == "fs/cgroup/cpu/app");
  CHECK(cgroup_text_cpu_quota("1:cpu:/app\n", sys) == Approx(0.2));
  CHECK_FALSE(cgroup_text_quota("1:cpu:/\n0::/\n", sys));
}
