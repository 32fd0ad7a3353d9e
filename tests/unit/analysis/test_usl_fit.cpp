#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "analysis/usl_fit.h"

using namespace loadwatch::analysis;

// Gunther's SPEC SDM91 benchmark, as the R package usl ships it (data "specsdm91") and fits it in
// its tests: sigma (alpha) 0.0277, kappa (beta) 0.000104, lambda (gamma) 89.99, N* 96.5.
TEST_CASE("the USL fit reproduces the published SPEC SDM91 coefficients") {
  std::vector<double> load = {1, 18, 36, 72, 108, 144, 216};
  std::vector<double> tput = {64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2};
  UslFit fit = fit_usl(load, tput);
  REQUIRE(fit.fitted);
  CHECK(fit.params.alpha == Approx(0.0277).margin(0.0001));
  CHECK(fit.params.beta == Approx(0.000104).margin(0.000001));
  CHECK(fit.params.gamma == Approx(89.99).margin(0.05));
  REQUIRE(fit.peak_users);
  CHECK(*fit.peak_users == Approx(96.5).margin(0.1));
  REQUIRE(fit.peak_throughput);
  CHECK(*fit.peak_throughput == Approx(fit.params.throughput(*fit.peak_users)));
  CHECK(fit.r_squared > 0.98);
  // The peak is the model's maximum: its neighbours are lower.
  CHECK(fit.params.throughput(*fit.peak_users - 5) < *fit.peak_throughput);
  CHECK(fit.params.throughput(*fit.peak_users + 5) < *fit.peak_throughput);
}

TEST_CASE("the USL fit recovers known coefficients from noisy synthetic data") {
  UslParams truth{0.05, 0.0005, 120};
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> n, x;
  for (double users = 1; users <= 120; users += 10) {
    n.push_back(users);
    x.push_back(truth.throughput(users) * (1 + noise(rng)));
  }
  UslFit fit = fit_usl(n, x);
  REQUIRE(fit.fitted);
  CHECK(fit.params.alpha == Approx(truth.alpha).margin(0.01));
  CHECK(fit.params.beta == Approx(truth.beta).margin(0.0001));
  CHECK(fit.params.gamma == Approx(truth.gamma).epsilon(0.03));
  CHECK(*fit.peak_users == Approx(std::sqrt((1 - truth.alpha) / truth.beta)).epsilon(0.1));
}

TEST_CASE("the USL bounds hold: linear scaling gives alpha = beta = 0 and no finite peak") {
  std::vector<double> n = {1, 2, 4, 8, 16};
  std::vector<double> x = {10, 20, 40, 80, 160};
  UslFit fit = fit_usl(n, x);
  REQUIRE(fit.fitted);
  CHECK(fit.params.alpha >= 0);
  CHECK(fit.params.beta >= 0);
  CHECK(fit.params.alpha < 1e-6);
  CHECK(fit.params.beta < 1e-9);
  CHECK(fit.params.gamma == Approx(10).epsilon(1e-6));
  CHECK_FALSE(fit.peak_users);
}

TEST_CASE("retrograde data pushing alpha below zero stays inside the bounds") {
  // Super-linear scaling would need a negative alpha; the fit must stop at the bound.
  std::vector<double> n = {1, 2, 3, 4, 5};
  std::vector<double> x = {10, 22, 36, 52, 70};
  UslFit fit = fit_usl(n, x);
  CHECK(fit.params.alpha >= 0);
  CHECK(fit.params.alpha <= 1);
  CHECK(fit.params.beta >= 0);
  CHECK(fit.params.beta <= 1);
  CHECK(fit.params.gamma >= 0);
}

TEST_CASE("fewer than four user counts give no numbers, only the reason") {
  UslFit fit = fit_usl({1, 2, 4}, {10, 18, 30});
  CHECK_FALSE(fit.fitted);
  CHECK_THAT(fit.reason, Catch::Contains("too few phases"));
  // Repeated user counts do not count twice.
  fit = fit_usl({1, 2, 2, 4}, {10, 18, 19, 30});
  CHECK_FALSE(fit.fitted);
}

TEST_CASE("a curve the law cannot describe is reported as a poor fit") {
  // Throughput jumping up and down with load: nothing like a USL curve.
  std::vector<double> n = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> x = {100, 10, 100, 10, 100, 10, 100, 10};
  UslFit fit = fit_usl(n, x);
  CHECK_FALSE(fit.fitted);
  CHECK_THAT(fit.reason, Catch::Contains("poor fit"));
}

TEST_CASE("bad numbers are refused, not fitted") {
  UslFit fit = fit_usl({0, 1, 2, 3}, {1, 2, 3, 4});
  CHECK_FALSE(fit.fitted);
  fit = fit_usl({1, 2, 3, 4}, {1, NAN, 3, 4});
  CHECK_FALSE(fit.fitted);
}
