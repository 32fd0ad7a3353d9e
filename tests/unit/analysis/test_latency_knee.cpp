#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <tuple>

#include "analysis/latency_knee.h"

using namespace loadwatch::analysis;

TEST_CASE("the latency knee is the first step clearly above the earlier trend") {
  // Closed-loop K-slot server: R = service while N <= K, then R = service * N / K (Little's law).
  const double service = 0.050;
  auto hockey_stick = [&](double k) {
    std::vector<double> users, p95;
    for (double n = 10; n <= 100; n += 10) {
      users.push_back(n);
      p95.push_back(service * std::max(1.0, n / k));
    }
    return std::pair{users, p95};
  };
  auto [users, p95] = hockey_stick(40);
  auto knee = latency_knee(users, p95);
  REQUIRE(knee);
  CHECK(users[knee->index] == 50);  // +25 %
  CHECK(knee->expected_seconds == Approx(0.050));
  CHECK(knee->p95_seconds == Approx(0.0625));

  // K = 45: 50 users is only +11 % and stays under the bar, but it must not drag the line up:
  // 60 users (+33 % over the flat start) is the knee.
  std::tie(users, p95) = hockey_stick(45);
  knee = latency_knee(users, p95);
  REQUIRE(knee);
  CHECK(users[knee->index] == 60);
  CHECK(knee->expected_seconds == Approx(0.050));
}

TEST_CASE("latency rising along a straight line is no knee") {
  std::vector<double> users = {10, 20, 30, 40, 50, 60};
  std::vector<double> p95 = {0.010, 0.012, 0.014, 0.016, 0.018, 0.020};
  CHECK_FALSE(latency_knee(users, p95));
}

TEST_CASE("a steeper slope after a gentle one is a knee") {
  std::vector<double> users = {10, 20, 30, 40, 50, 60};
  std::vector<double> p95 = {0.010, 0.011, 0.012, 0.013, 0.030, 0.060};
  auto knee = latency_knee(users, p95);
  REQUIRE(knee);
  CHECK(knee->index == 4);
  CHECK(knee->expected_seconds == Approx(0.014));
}

TEST_CASE("noise on a flat latency is no knee; a falling start does not lower the bar") {
  std::mt19937 rng(11);
  std::normal_distribution<double> jitter(0.0, 0.05);
  std::vector<double> users, p95;
  for (double n = 10; n <= 100; n += 10) {
    users.push_back(n);
    p95.push_back(0.040 * (1 + jitter(rng)));
  }
  CHECK_FALSE(latency_knee(users, p95));
  // Warm-up makes the first phases slower; the fitted line falls, and the mean is used instead.
  CHECK_FALSE(latency_knee({10, 20, 30, 40}, {0.050, 0.045, 0.040, 0.045}));
}

TEST_CASE("sub-millisecond rises are below the floor") {
  CHECK_FALSE(latency_knee({10, 20, 30}, {0.0002, 0.0002, 0.0008}));
  CHECK(latency_knee({10, 20, 30}, {0.002, 0.002, 0.004}));
}

TEST_CASE("the first two phases set the curve and cannot be knees") {
  CHECK_FALSE(latency_knee({10, 20}, {0.010, 0.100}));
  auto knee = latency_knee({10, 20, 30}, {0.010, 0.010, 0.100});
  REQUIRE(knee);
  CHECK(knee->index == 2);
}
