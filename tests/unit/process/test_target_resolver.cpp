// Selectors and descendants over the controlled fixture tree tests/fixtures/targets
// (real captured /proc files with rewritten PIDs; see make-tree.py there).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "process/port_owner.h"
#include "process/process_registry.h"
#include "process/process_tree.h"
#include "process/target_resolver.h"
#include "procfs/cgroup_unit.h"
#include "tests/lib/build_paths.h"
#include "util/bounded_file.h"

using loadwatch::test::fixture_path;
using namespace loadwatch;
namespace fs = std::filesystem;

namespace {

const FsRoot kProc(fixture_path("targets/proc"));
const FsRoot kSys(fixture_path("targets/sys"));

std::vector<pid_t> resolve(ProcessRegistry& reg, const std::string& selector,
                           std::uint64_t* denied = nullptr) {
  auto r = make_target_resolver(parse_selector(selector));
  if (r->scans_processes()) reg.refresh_listing(true);
  ResolveContext ctx{reg, kSys};
  std::vector<pid_t> roots;
  r->resolve(ctx, roots);
  std::sort(roots.begin(), roots.end());
  if (denied) *denied = ctx.denied;
  return roots;
}

std::vector<pid_t> resolve_once(const std::string& selector) {
  ProcessRegistry reg(kProc);
  reg.begin_sample();
  auto roots = resolve(reg, selector);
  reg.end_sample();
  return roots;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/lw-resolver-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

using Pids = std::vector<pid_t>;

}  // namespace

TEST_CASE("pidfile content", "[resolver]") {
  CHECK(parse_pidfile("1234\n") == 1234);
  CHECK(parse_pidfile("  77 \r\n") == 77);
  CHECK_FALSE(parse_pidfile(""));
  CHECK_FALSE(parse_pidfile("\n"));
  CHECK_FALSE(parse_pidfile("abc"));
  CHECK_FALSE(parse_pidfile("12abc"));
  CHECK_FALSE(parse_pidfile("12 13"));
  CHECK_FALSE(parse_pidfile("0"));
  CHECK_FALSE(parse_pidfile("-5"));
  CHECK_FALSE(parse_pidfile("99999999999999999999"));
}

TEST_CASE("cmdline joining and exe matching", "[resolver]") {
  CHECK(join_cmdline(std::string_view("node\0a.js\0--x\0", 15)) == "node a.js --x");
  CHECK(join_cmdline(std::string_view("nginx: worker process\0\0\0", 24)) ==
        "nginx: worker process");
  CHECK(join_cmdline("") == "");
  CHECK(exe_matches("/usr/bin/node", "node"));
  CHECK(exe_matches("/usr/bin/node", "/usr/bin/node"));
  CHECK(exe_matches("/usr/bin/node (deleted)", "node"));
  CHECK(exe_matches("/usr/bin/node (deleted)", "/usr/bin/node"));
  CHECK_FALSE(exe_matches("/usr/bin/nodejs", "node"));
  CHECK_FALSE(exe_matches("/usr/local/bin/node", "/usr/bin/node"));
  CHECK_FALSE(exe_matches("/usr/bin/node", "bin/node"));
}

TEST_CASE("pid and pidfile", "[resolver]") {
  CHECK(resolve_once("pid:200") == Pids{200});
  TempDir dir;
  const std::string file = (dir.path / "mb.pid").string();
  CHECK(resolve_once("pidfile:" + file).empty());  // missing: down, no error
  std::ofstream(file) << "100\n";
  CHECK(resolve_once("pidfile:" + file) == Pids{100});
  std::ofstream(file) << "\x01\x02garbage\xff";
  CHECK(resolve_once("pidfile:" + file).empty());
}

TEST_CASE("pidfile: a FIFO, a device or a huge file is a target down, at once", "[resolver]") {
  TempDir dir;
  const std::string fifo = (dir.path / "fifo.pid").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // holds it open, never writes
  REQUIRE(writer >= 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(resolve_once("pidfile:" + fifo).empty());
  ::close(writer);
  const std::string zero = (dir.path / "zero.pid").string();
  fs::create_symlink("/dev/zero", zero);
  CHECK(resolve_once("pidfile:" + zero).empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  const std::string big = (dir.path / "big.pid").string();
  std::ofstream(big) << "100" << std::string(kMaxPidfileBytes, ' ');
  CHECK(resolve_once("pidfile:" + big).empty());
  // A link to a regular pidfile is followed (/var/run -> /run).
  std::ofstream((dir.path / "real.pid").string()) << "100\n";
  fs::create_symlink(dir.path / "real.pid", dir.path / "link.pid");
  CHECK(resolve_once("pidfile:" + (dir.path / "link.pid").string()) == Pids{100});
}

TEST_CASE("cmdline: the first 128 KiB of a long command line are matched", "[resolver]") {
  TempDir dir;
  fs::copy(kProc.root(), dir.path / "proc",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const FsRoot proc((dir.path / "proc").string());
  // A JVM-like command line: 200 KiB of classpath, the main class at the end.
  std::string cmdline =
      std::string("java\0-cp\0", 9) + std::string(200 << 10, 'x') + std::string("\0org.Main\0", 10);
  std::ofstream(dir.path / "proc/101/cmdline", std::ios::binary) << cmdline;
  auto matches = [&](const std::string& selector) {
    ProcessRegistry reg(proc);
    reg.begin_sample();
    auto r = make_target_resolver(parse_selector(selector));
    reg.refresh_listing(true);
    ResolveContext ctx{reg, kSys};
    std::vector<pid_t> roots;
    r->resolve(ctx, roots);
    reg.end_sample();
    return std::find(roots.begin(), roots.end(), 101) != roots.end();
  };
  CHECK(matches("cmdline:^java -cp x{1000}"));
  CHECK(matches("cmdline:(x+x+)+y|java"));     // exponential for a backtracking engine
  CHECK_FALSE(matches("cmdline:org\\.Main"));  // past kMaxCmdlineBytes
  CHECK(kMaxCmdlineBytes == 128u << 10);
}

TEST_CASE("comm, exe and cmdline walk the listing", "[resolver]") {
  CHECK(resolve_once("comm:mbnode") == Pids{100});
  CHECK(resolve_once("comm:a b) c") == Pids{300});
  CHECK(resolve_once("comm:mbnod").empty());          // exact, not a prefix
  CHECK(resolve_once("exe:node") == Pids{100, 101});  // 101's binary was replaced on disk
  CHECK(resolve_once("exe:/usr/bin/dash") == Pids{103});
  CHECK(resolve_once("exe:/usr/bin/nod").empty());
  CHECK(resolve_once("cmdline:mb --port 2525") == Pids{100});
  CHECK(resolve_once("cmdline:^sshd: ") == Pids{200});
  CHECK(resolve_once("cmdline:a b\\) c 600$") == Pids{300});
  // The zombie (102) has an empty command line: never a match.
  CHECK(resolve_once("cmdline:.*") == Pids{100, 101, 103, 200, 300});
}

TEST_CASE("exe/cmdline matches are cached per process, re-checked with back-off", "[resolver]") {
  TempDir dir;
  fs::copy(kProc.root(), dir.path / "proc",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const FsRoot proc((dir.path / "proc").string());
  ProcessRegistry reg(proc);
  auto r = make_target_resolver(parse_selector("cmdline:worker"));
  auto sample = [&] {
    reg.begin_sample();
    reg.refresh_listing(true);
    ResolveContext ctx{reg, kSys};
    std::vector<pid_t> roots;
    r->resolve(ctx, roots);
    reg.end_sample();
    return roots;
  };
  for (int i = 0; i < 10; ++i) REQUIRE(sample() == Pids{101});
  // The process rewrites its command line (like process.title): no exec, same stat. The
  // cached answer holds for a while (the check interval has grown to 8 samples), and the
  // back-off re-check catches the change.
  std::ofstream(dir.path / "proc/101/cmdline", std::ios::binary) << std::string("mb idle\0", 8);
  int samples = 1;
  while (!sample().empty() && samples < 200) ++samples;
  CHECK(samples > 1);
  CHECK(samples <= 64 + 1);
}

TEST_CASE("unit: cgroup v2 and v1, sub-cgroups, missing unit", "[resolver]") {
  CHECK(resolve_once("unit:mb.service") == Pids{100, 101, 103});
  CHECK(resolve_once("unit:mb") == Pids{100, 101, 103});
  CHECK(resolve_once("unit:dev.service") == Pids{200});
  CHECK(resolve_once("unit:legacy.service") == Pids{300});
  CHECK(resolve_once("unit:nothere.service").empty());
  CHECK(find_unit_cgroup(kSys, "mb.service") == "fs/cgroup/unified/system.slice/mb.service");
  CHECK(find_unit_cgroup(kSys, "dev.service") ==
        "fs/cgroup/unified/user.slice/user-1000.slice/user@1000.service/app.slice/dev.service");
  CHECK(find_unit_cgroup(kSys, "legacy.service") ==
        "fs/cgroup/systemd/system.slice/legacy.service");
  CHECK_FALSE(find_unit_cgroup(kSys, "../x"));
  CHECK(unit_name("mb") == "mb.service");
  CHECK(unit_name("user.slice") == "user.slice");
  std::vector<pid_t> out;
  parse_cgroup_procs("1\n22\nx\n\n333\n", out);
  CHECK(out == Pids{1, 22, 333});
}

TEST_CASE("unit: the cached cgroup is re-read; a stopped unit is down", "[resolver]") {
  TempDir dir;
  fs::copy(kSys.root(), dir.path / "sys", fs::copy_options::recursive);
  const FsRoot sys((dir.path / "sys").string());
  UnitCgroup unit("mb.service");
  std::vector<pid_t> out;
  CHECK(unit.pids(sys, out));
  CHECK(out.size() == 3);
  const auto cg = dir.path / "sys/fs/cgroup/unified/system.slice/mb.service";
  std::ofstream(cg / "cgroup.procs") << "100\n";
  out.clear();
  CHECK(unit.pids(sys, out));
  CHECK(out == Pids{100, 103});
  fs::remove_all(cg);  // systemd removes the cgroup when the unit stops
  out.clear();
  CHECK_FALSE(unit.pids(sys, out));
  CHECK(out.empty());
}

TEST_CASE("port: the owner of a listener, IPv4 and IPv6; verified, not re-searched", "[resolver]") {
  ProcessRegistry reg(kProc);
  auto owner = std::make_unique<PortOwner>(2525);
  std::uint64_t denied = 0;
  for (int i = 0; i < 3; ++i) {
    reg.begin_sample();
    std::vector<pid_t> out;
    owner->resolve(reg, out, denied);
    CHECK(out == Pids{100});
    CHECK_FALSE(reg.listed() == (i > 0));  // later samples never list /proc
    reg.end_sample();
  }
  CHECK(owner->searches() == 1);
  CHECK(resolve_once("port:3000") == Pids{200});  // tcp6 [::]:3000
  // 3001 has a listener whose owner is nowhere (another namespace): down, and not
  // searched again every sample.
  PortOwner orphan(3001);
  for (int i = 0; i < 5; ++i) {
    reg.begin_sample();
    std::vector<pid_t> out;
    orphan.resolve(reg, out, denied);
    CHECK(out.empty());
    reg.end_sample();
  }
  CHECK(orphan.searches() == 1);
  CHECK(resolve_once("port:4000").empty());  // no listener at all
  auto inodes = listening_inodes(kProc, 2525);
  CHECK(inodes == std::vector<std::uint64_t>{5555});  // 7777 is an established socket
}

TEST_CASE("children: by the listing's parent PIDs", "[resolver]") {
  ProcessRegistry reg(kProc);
  reg.begin_sample();
  std::vector<pid_t> members{100};
  add_descendants(reg, members);
  CHECK(members == Pids{100, 101, 102, 103});  // 103 is a grandchild
  members = {101, 200};
  add_descendants(reg, members);
  CHECK(members == Pids{101, 103, 200});
  reg.end_sample();
}

TEST_CASE("children: not walked again while no PID was allocated", "[resolver]") {
  TempDir dir;
  fs::copy(kProc.root(), dir.path / "proc",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  ProcessRegistry reg(FsRoot((dir.path / "proc").string()));
  DescendantCache cache;
  auto walk = [&](std::vector<pid_t> members) {
    reg.begin_sample();
    add_descendants(reg, members, &cache);
    const bool listed = reg.listed();
    reg.end_sample();
    return std::make_pair(members, listed);
  };
  CHECK(walk({101}) == std::make_pair(Pids{101, 103}, true));
  // Same roots, same last_pid in loadavg, nobody exited: reused without a listing.
  CHECK(walk({101}) == std::make_pair(Pids{101, 103}, false));
  CHECK(walk({101}) == std::make_pair(Pids{101, 103}, false));
  // Other roots: walked.
  CHECK(walk({200}) == std::make_pair(Pids{200}, true));
  CHECK(walk({101}) == std::make_pair(Pids{101, 103}, true));
  // A fork somewhere (last_pid moved on): walked again, and the new child is found.
  fs::copy(dir.path / "proc/300", dir.path / "proc/301",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  {
    std::string stat = FsRoot((dir.path / "proc").string()).read_or_throw("300/stat");
    stat.replace(0, 3, "301");
    auto ppid_at = stat.rfind(") S 1 ") + 4;
    stat.replace(ppid_at, 1, "103");
    std::ofstream(dir.path / "proc/301/stat") << stat;
  }
  std::ofstream(dir.path / "proc/loadavg") << "0.00 0.00 0.00 1/100 301\n";
  CHECK(walk({101}) == std::make_pair(Pids{101, 103, 301}, true));
  // A member that has exited (the zombie 102 under 100): its children may have been
  // re-parented, so every sample walks.
  CHECK(walk({100}) == std::make_pair(Pids{100, 101, 102, 103, 301}, true));
  CHECK(walk({100}).second == true);
}

TEST_CASE("children: by task/TID/children where the kernel has them", "[resolver]") {
  TempDir dir;
  fs::copy(kProc.root(), dir.path / "proc",
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  auto children = [&](int pid, const std::string& content) {
    auto d = dir.path / "proc" / std::to_string(pid) / "task" / std::to_string(pid);
    fs::create_directories(d);
    std::ofstream(d / "children") << content;
  };
  // Deliberately not what the parent PIDs say (300's parent is 1): proves the files were
  // read, not the listing.
  children(100, "101 102 300 ");
  children(101, "103 ");
  children(102, "");
  children(103, "");
  children(300, "");
  ProcessRegistry reg(FsRoot((dir.path / "proc").string()));
  reg.begin_sample();
  std::vector<pid_t> members{100};
  add_descendants(reg, members);
  CHECK(members == Pids{100, 101, 102, 103, 300});
  CHECK_FALSE(reg.listed());
  CHECK(reg.children_files() == true);
  reg.end_sample();

  // Without the files (no CONFIG_PROC_CHILDREN) the listing is used, and remembered.
  ProcessRegistry plain(kProc);
  plain.begin_sample();
  members = {100};
  add_descendants(plain, members);
  CHECK(members == Pids{100, 101, 102, 103});
  CHECK(plain.children_files() == false);
  plain.end_sample();
}

TEST_CASE("registry: member fields of a fixture process", "[resolver]") {
  ProcessRegistry reg(kProc);
  reg.begin_sample();
  ProcessRecord* rec = reg.member(100);
  REQUIRE(rec);
  CHECK(rec->stat.comm == "mbnode");
  CHECK(rec->stat.num_threads == 5);
  CHECK(rec->open_fds == 5);  // not procfs: fd/ entries are counted
  REQUIRE(rec->fd_limit);
  CHECK(rec->fd_limit->soft == 20000);
  REQUIRE(rec->io);
  CHECK(rec->io->write_bytes == 4096);
  CHECK(rec->status.voluntary_ctxt_switches == 30);
  CHECK_FALSE(rec->partial);
  CHECK(reg.member(4242) == nullptr);  // no such process: gone, not an error
  reg.end_sample();
}
