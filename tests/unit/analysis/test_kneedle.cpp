#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "analysis/kneedle.h"

using namespace loadwatch::analysis;

namespace {

/// A server with at most K requests in service, each taking `service` seconds, driven by N
/// closed-loop users: X = min(N, K) / service, with relative noise.
std::vector<double> capacity_curve(const std::vector<double>& users, double k, double service,
                                   double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> jitter(0.0, noise);
  std::vector<double> x;
  for (double n : users) x.push_back(std::min(n, k) / service * (1 + jitter(rng)));
  return x;
}

std::vector<double> steps(double first, double step, int count) {
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(first + step * i);
  return v;
}

}  // namespace

TEST_CASE("Kneedle finds the capacity of a K-slot server within one step, under noise") {
  // Several capacities, step sizes and noise draws: the knee must sit at N = K +/- one step.
  struct Case {
    double k, first, step;
    int count;
  };
  for (Case c : {Case{50, 10, 10, 10}, Case{40, 10, 10, 8}, Case{100, 20, 20, 10},
                 Case{8, 1, 1, 16}, Case{300, 50, 50, 12}}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      std::vector<double> users = steps(c.first, c.step, c.count);
      std::vector<double> tput = capacity_curve(users, c.k, 0.05, 0.02, seed);
      KneedleResult r = kneedle(users, tput);
      INFO("K=" << c.k << " step=" << c.step << " seed=" << seed);
      REQUIRE(r.knee);
      CHECK(std::fabs(users[*r.knee] - c.k) <= c.step);
    }
  }
}

TEST_CASE("without noise the knee is exactly the capacity") {
  std::vector<double> users = steps(10, 10, 10);
  KneedleResult r = kneedle(users, capacity_curve(users, 60, 0.1, 0.0, 1));
  REQUIRE(r.knee);
  CHECK(users[*r.knee] == 60);
  // The difference curve peaks there.
  auto peak = std::max_element(r.difference.begin(), r.difference.end()) - r.difference.begin();
  CHECK(static_cast<std::size_t>(peak) == *r.knee);
}

TEST_CASE("Kneedle works on unevenly spaced user counts (a wrk -c sweep)") {
  std::vector<double> users = {200, 500, 1000, 3000, 5000, 10000, 15000, 20000};
  std::vector<double> tput;
  for (double n : users) tput.push_back(60000 * (1 - std::exp(-n / 1500.0)));
  KneedleResult r = kneedle(users, tput);
  REQUIRE(r.knee);
  CHECK(users[*r.knee] >= 3000);
  CHECK(users[*r.knee] <= 5000);
}

TEST_CASE("throughput that keeps scaling has no knee") {
  std::vector<double> users = steps(10, 10, 10);
  std::mt19937 rng(3);
  std::normal_distribution<double> jitter(0.0, 0.01);
  std::vector<double> tput;
  for (double n : users) tput.push_back(n * 20 * (1 + jitter(rng)));
  CHECK_FALSE(kneedle(users, tput).knee);
}

TEST_CASE("a retrograde curve (SPEC SDM91) has its knee before the peak") {
  std::vector<double> load = {1, 18, 36, 72, 108, 144, 216};
  std::vector<double> tput = {64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2};
  KneedleResult r = kneedle(load, tput);
  REQUIRE(r.knee);
  CHECK(load[*r.knee] == 36);
}

TEST_CASE("sensitivity: a larger S needs a deeper fall before a knee counts") {
  // A shallow knee: the curve bends but keeps rising a little.
  std::vector<double> users = steps(10, 10, 10);
  std::vector<double> tput;
  for (double n : users) tput.push_back(n <= 50 ? n : 50 + (n - 50) * 0.6);
  CHECK(kneedle(users, tput, {1.0, false}).knee);
  CHECK_FALSE(kneedle(users, tput, {5.0, false}).knee);
}

TEST_CASE("offline returns the first knee, online the last") {
  // Two plateaus: capacity 30, then (another resource added) capacity 80.
  std::vector<double> users = steps(10, 10, 12);
  std::vector<double> tput;
  for (double n : users) tput.push_back(n <= 30 ? n : n <= 60 ? 30 : n <= 80 ? n - 30 : 50);
  KneedleResult offline = kneedle(users, tput, {1.0, false});
  KneedleResult online = kneedle(users, tput, {1.0, true});
  REQUIRE(offline.knee);
  REQUIRE(online.knee);
  CHECK(users[*offline.knee] == 30);
  CHECK(users[*online.knee] == 80);
  CHECK(online.all_knees.size() == 2);
}

TEST_CASE("too few points or a flat curve give no knee") {
  CHECK_FALSE(kneedle({1, 2}, {1, 2}).knee);
  CHECK_FALSE(kneedle({1, 2, 3, 4}, {5, 5, 5, 5}).knee);
  CHECK_FALSE(kneedle({}, {}).knee);
}
