// The CPUs a process may use: affinity lists, cgroup v2 cpu.max and v1 CFS quotas, over a
// fixture tree laid out as the kernel does (a quota on an ancestor counts; the smallest wins).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "procfs/cpu_limit.h"
#include "tests/lib/temp_dir.h"

using namespace loadwatch;

namespace {

void write(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

}  // namespace

TEST_CASE("cpu lists count ranges and single CPUs") {
  CHECK(count_cpu_list("0-1") == 2);
  CHECK(count_cpu_list("0-3,8,10-11\n") == 7);
  CHECK(count_cpu_list("5") == 1);
  CHECK_FALSE(count_cpu_list(""));
  CHECK_FALSE(count_cpu_list("3-1"));
  CHECK_FALSE(count_cpu_list("0-x"));
  CHECK_FALSE(count_cpu_list("0-4294967295"));  // bounded, not a loop over 4 billion
  CHECK(status_cpus_allowed("Name:\tpython3\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n") == 2);
  CHECK_FALSE(status_cpus_allowed("Name:\tpython3\n"));
}

TEST_CASE("quotas read as cores; no quota is none") {
  CHECK(parse_cpu_max("20000 100000\n") == Approx(0.2));
  CHECK(parse_cpu_max("150000 100000") == Approx(1.5));
  CHECK_FALSE(parse_cpu_max("max 100000\n"));
  CHECK_FALSE(parse_cpu_max("garbage"));
  CHECK_FALSE(parse_cpu_max("1000 0"));
  CHECK(parse_cfs_quota("50000\n", "100000\n") == Approx(0.5));
  CHECK_FALSE(parse_cfs_quota("-1\n", "100000\n"));
}

TEST_CASE("a cgroup v2 quota on the process's cgroup or an ancestor limits it") {
  test::TempDir dir;
  FsRoot proc((dir.path / "proc").string()), sys((dir.path / "sys").string());
  write(dir.path / "proc/42/cgroup", "0::/gen.slice/locust\n");
  write(dir.path / "proc/42/status", "Name:\tlocust\nCpus_allowed_list:\t0-3\n");
  write(dir.path / "sys/fs/cgroup/gen.slice/locust/cpu.max", "max 100000\n");
  CHECK_FALSE(cgroup_cpu_quota(proc, sys, 42));
  CHECK(process_cpu_limit(proc, sys, 42) == Approx(4));  // the affinity alone

  write(dir.path / "sys/fs/cgroup/gen.slice/cpu.max", "30000 100000\n");
  CHECK(process_cpu_limit(proc, sys, 42) == Approx(0.3));
  write(dir.path / "sys/fs/cgroup/gen.slice/locust/cpu.max", "10000 50000\n");
  CHECK(process_cpu_limit(proc, sys, 42) == Approx(0.2));  // the smallest on the way up

  CHECK_FALSE(process_cpu_limit(proc, sys, 43));  // no such process

  // Members of one cgroup share the quota read for the first of them.
  write(dir.path / "proc/44/cgroup", "0::/gen.slice/locust\n");
  write(dir.path / "proc/44/status", "Cpus_allowed_list:\t0-3\n");
  CgroupQuotaCache cache;
  CHECK(process_cpu_limit(proc, sys, 42, &cache) == Approx(0.2));
  write(dir.path / "sys/fs/cgroup/gen.slice/locust/cpu.max", "max 100000\n");
  CHECK(process_cpu_limit(proc, sys, 44, &cache) == Approx(0.2));
  CHECK(cache.size() == 1);
  CHECK(process_cpu_limit(proc, sys, 44) == Approx(0.3));  // read afresh
}

TEST_CASE("a cgroup v1 CFS quota limits the process; other controllers do not") {
  test::TempDir dir;
  FsRoot proc((dir.path / "proc").string()), sys((dir.path / "sys").string());
  write(dir.path / "proc/7/cgroup",
        "4:memory:/box\n2:cpu,cpuacct:/lw/app\n1:name=systemd:/\n0::/\n");
  write(dir.path / "proc/7/status", "Cpus_allowed_list:\t0\n");
  write(dir.path / "sys/fs/cgroup/memory/box/cpu.cfs_quota_us", "1000\n");  // not the cpu hierarchy
  write(dir.path / "sys/fs/cgroup/memory/box/cpu.cfs_period_us", "100000\n");
  write(dir.path / "sys/fs/cgroup/cpu,cpuacct/lw/app/cpu.cfs_quota_us", "-1\n");
  write(dir.path / "sys/fs/cgroup/cpu,cpuacct/lw/app/cpu.cfs_period_us", "100000\n");
  CHECK_FALSE(cgroup_cpu_quota(proc, sys, 7));
  CHECK(process_cpu_limit(proc, sys, 7) == Approx(1));

  write(dir.path / "sys/fs/cgroup/cpu,cpuacct/lw/cpu.cfs_quota_us", "15000\n");
  write(dir.path / "sys/fs/cgroup/cpu,cpuacct/lw/cpu.cfs_period_us", "100000\n");
  CHECK(process_cpu_limit(proc, sys, 7) == Approx(0.15));
}

TEST_CASE("a cgroup path that climbs out of the hierarchy is not followed") {
  test::TempDir dir;
  FsRoot proc((dir.path / "proc").string()), sys((dir.path / "sys").string());
  write(dir.path / "proc/9/cgroup", "0::/../../etc\n");
  write(dir.path / "sys/etc/cpu.max", "1000 100000\n");
  CHECK_FALSE(cgroup_cpu_quota(proc, sys, 9));
}
