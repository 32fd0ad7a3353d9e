// ClockWatch: awake time is the monotonic clock less the gaps, whatever the wall clock does.
#include <catch2/catch.hpp>

#include "util/clock_watch.h"

using namespace loadwatch;

TEST_CASE("awake time follows the monotonic clock, not the wall clock") {
  ClockWatch w(5);
  CHECK(w.look(1000, 10).awake == 0);  // the first look only sets the start
  auto l = w.look(1001, 11);
  CHECK(l.awake == Approx(1));
  CHECK(l.gap == 0);
  CHECK(l.wall_step == 0);
  // The wall clock set 20 s ahead (NTP, a VM resumed): a step, and awake time moves 1 s.
  l = w.look(1022, 12);
  CHECK(l.awake == Approx(2));
  CHECK(l.wall_step == Approx(20));
  CHECK(w.steps() == 1);
  // And back again.
  l = w.look(1003.5, 13);
  CHECK(l.wall_step == Approx(-19.5));
  CHECK(w.steps() == 2);
  CHECK(w.gaps() == 0);
}

TEST_CASE("a span longer than the gap is left out of awake time") {
  ClockWatch w(5);
  w.look(0, 100);
  w.look(1, 101);
  // Stopped for 17 s (SIGSTOP): both clocks moved, nothing could be seen.
  auto l = w.look(18, 118);
  CHECK(l.gap == Approx(17));
  CHECK(l.wall_step == 0);
  CHECK(l.awake == Approx(1));
  CHECK(w.gaps() == 1);
  CHECK(w.gap_seconds() == Approx(17));
  // A span at the gap itself still counts.
  l = w.look(23, 123);
  CHECK(l.gap == 0);
  CHECK(l.awake == Approx(6));
}

TEST_CASE("a monotonic source that goes back is taken as standing still") {
  ClockWatch w(5);
  w.look(0, 50);
  auto l = w.look(1, 40);
  CHECK(l.awake == 0);
  CHECK(l.gap == 0);
  CHECK(w.look(2, 51).awake == Approx(1));  // from the highest seen, 50
}

TEST_CASE("small differences between the clocks are no step") {
  ClockWatch w(5);
  w.look(0, 0);
  // Read at slightly different moments, or slewed by NTP: well under a second each look.
  double wall = 0, mono = 0;
  for (int i = 0; i < 1000; ++i) {
    wall += 0.5003;
    mono += 0.5;
    w.look(wall, mono);
  }
  CHECK(w.steps() == 0);
  CHECK(w.awake() == Approx(500));
}
