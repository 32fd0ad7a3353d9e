// Group accounting on synthetic samples: monotonic counters across member exits,
// restarts (also faster than one interval), the RSS peak, fd usage.
#include <catch2/catch.hpp>

#include "process/target_group.h"

using namespace loadwatch;

namespace {

MemberSample member(pid_t pid, std::uint64_t start, std::uint64_t utime, std::uint64_t rss = 0) {
  MemberSample m;
  m.key = {pid, start};
  m.counters.utime_ticks = utime;
  m.counters.stime_ticks = utime / 2;
  m.counters.voluntary_ctxt_switches = utime * 10;
  m.counters.read_bytes = utime * 4096;
  m.rss_bytes = rss;
  m.threads = 1;
  return m;
}

GroupSample live(std::initializer_list<MemberSample> ms) { return GroupSample{ms, {}}; }

}  // namespace

TEST_CASE("a target that never matched is down with zero counters", "[group]") {
  TargetGroup g;
  g.update({});
  CHECK_FALSE(g.totals().up);
  CHECK(g.totals().processes == 0);
  CHECK(g.totals().restarts == 0);
  CHECK(g.totals().counters.utime_ticks == 0);
  CHECK(g.totals().rss_peak_bytes == 0);
  CHECK_FALSE(g.totals().oldest_starttime);
}

TEST_CASE("a member's exit keeps the group counters monotonic", "[group]") {
  TargetGroup g;
  g.update(live({member(10, 1, 100), member(11, 5, 50), member(12, 5, 30)}));
  CHECK(g.totals().processes == 3);
  CHECK(g.totals().counters.utime_ticks == 180);

  // Worker 11 exits (gone without a trace): its last-seen 50 ticks stay.
  g.update(live({member(10, 1, 110), member(12, 5, 35)}));
  CHECK(g.totals().processes == 2);
  CHECK(g.totals().counters.utime_ticks == 195);
  CHECK(g.totals().counters.voluntary_ctxt_switches == 1950);
  CHECK(g.totals().counters.read_bytes == 195 * 4096);
  CHECK(g.totals().restarts == 0);

  // Worker 12 shows up as a zombie with its final counters: they count, it does not.
  GroupSample s = live({member(10, 1, 120)});
  s.exited.push_back(member(12, 5, 40));
  g.update(s);
  CHECK(g.totals().processes == 1);
  CHECK(g.totals().counters.utime_ticks == 120 + 50 + 40);
  // Still a zombie next sample: not counted twice.
  g.update(s);
  CHECK(g.totals().counters.utime_ticks == 120 + 50 + 40);
  // Reaped.
  g.update(live({member(10, 1, 121)}));
  CHECK(g.totals().counters.utime_ticks == 121 + 50 + 40);
}

TEST_CASE("a counter read lower once (partial read) does not lower the total", "[group]") {
  TargetGroup g;
  g.update(live({member(10, 1, 100)}));
  MemberSample glitch = member(10, 1, 100);
  glitch.counters.read_bytes = 0;  // e.g. /proc/PID/io denied this time
  g.update(live({glitch}));
  CHECK(g.totals().counters.read_bytes == 100 * 4096);
}

TEST_CASE("a member that leaves and comes back is not counted twice", "[group]") {
  TargetGroup g;
  g.update(live({member(10, 1, 100), member(11, 2, 40)}));
  g.update(live({member(10, 1, 100)}));  // 11 stops matching (e.g. its title changed)
  CHECK(g.totals().counters.utime_ticks == 140);
  g.update(live({member(10, 1, 100), member(11, 2, 45)}));  // and matches again
  CHECK(g.totals().counters.utime_ticks == 145);
  CHECK(g.totals().processes == 2);
}

TEST_CASE("restarts: down then up, and replaced within one interval", "[group]") {
  TargetGroup g;
  g.update({});  // not there at start-up
  g.update(live({member(10, 1, 5, 1000)}));
  CHECK(g.totals().up);
  CHECK(g.totals().restarts == 0);  // the first start is not a restart

  g.update({});  // killed
  CHECK_FALSE(g.totals().up);
  CHECK(g.totals().counters.utime_ticks == 5);  // held while down
  g.update(live({member(20, 9, 1, 500)}));      // back
  CHECK(g.totals().up);
  CHECK(g.totals().restarts == 1);
  CHECK(g.totals().counters.utime_ticks == 6);

  // Replaced between two samples: new PID.
  g.update(live({member(30, 12, 2, 700)}));
  CHECK(g.totals().restarts == 2);
  // Same PID, new start time (PID reuse): also a restart.
  g.update(live({member(30, 15, 1, 700)}));
  CHECK(g.totals().restarts == 3);
  CHECK(g.totals().counters.utime_ticks == 5 + 1 + 2 + 1);
  // A worker replaced while the main process stays: not a restart.
  g.update(live({member(30, 15, 2, 700), member(31, 16, 1, 100)}));
  g.update(live({member(30, 15, 3, 700), member(32, 17, 1, 100)}));
  CHECK(g.totals().restarts == 3);
  // The old main process exits as a zombie while its replacement runs: a restart.
  GroupSample s = live({member(40, 20, 1, 100)});
  s.exited.push_back(member(30, 15, 3));
  g.update(s);
  CHECK(g.totals().restarts == 4);
}

TEST_CASE("the RSS peak is per run", "[group]") {
  TargetGroup g;
  g.update(live({member(10, 1, 1, 1000)}));
  CHECK(g.totals().rss_peak_bytes == 1000);
  g.update(live({member(10, 1, 1, 3000)}));
  g.update(live({member(10, 1, 1, 2000)}));
  CHECK(g.totals().rss_bytes == 2000);
  CHECK(g.totals().rss_peak_bytes == 3000);
  g.update({});
  CHECK(g.totals().rss_bytes == 0);
  CHECK(g.totals().rss_peak_bytes == 3000);  // the last run's peak, while down
  g.update(live({member(11, 2, 1, 500)}));
  CHECK(g.totals().rss_peak_bytes == 500);  // restarted: a new peak
  g.update(live({member(12, 3, 1, 400)}));  // replaced within an interval
  CHECK(g.totals().rss_peak_bytes == 400);
}

TEST_CASE("gauges: sums, fd usage of the member closest to its limit, oldest start", "[group]") {
  TargetGroup g;
  MemberSample a = member(10, 50, 1, 100);
  a.open_fds = 900;
  a.fd_limit = 1024;
  a.vsize_bytes = 10;
  a.swap_bytes = 3;
  a.threads = 8;
  MemberSample b = member(11, 40, 1, 200);
  b.open_fds = 5000;
  b.fd_limit = 65536;
  b.vsize_bytes = 20;
  b.threads = 2;
  MemberSample c = member(12, 60, 1, 300);
  c.open_fds = 7;  // limit unknown (unreadable): not in the ratio
  g.update(live({a, b, c}));
  const auto& t = g.totals();
  CHECK(t.rss_bytes == 600);
  CHECK(t.vsize_bytes == 30);
  CHECK(t.swap_bytes == 3);
  CHECK(t.open_fds == 5907);
  CHECK(t.threads == 11);
  REQUIRE(t.fd_usage_ratio);
  CHECK(*t.fd_usage_ratio == Approx(900.0 / 1024));
  CHECK(*t.max_fds == 1024);
  CHECK(*t.oldest_starttime == 40);
}
