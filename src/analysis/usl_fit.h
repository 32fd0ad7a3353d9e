#pragma once
// Gunther's Universal Scalability Law, X(N) = γN / (1 + α(N−1) + βN(N−1)), fitted by bounded
// non-linear least squares on throughput (Eigen's Levenberg–Marquardt, MINPACK's lmder).
// The bounds α, β in [0, 1] and γ >= 0 hold by construction: the optimiser moves (a, b, c) freely
// and the model reads α = sin²a, β = sin²b, γ = c² (the transform MINUIT uses for bounded
// parameters), so no step can leave the box.

#include <optional>
#include <string>
#include <vector>

namespace loadwatch::analysis {

inline constexpr std::size_t kUslMinPoints = 4;  // three parameters need a fourth point to judge
inline constexpr double kUslMinRSquared = 0.90;  // below this the numbers mean little
// α or β at or below this counts as 0 (a fit pressed against the bound stops near 1e-15).
// β = 1e-12 still means a peak at a million users, beyond any step-load.
inline constexpr double kUslNegligible = 1e-12;

struct UslParams {
  double alpha = 0;  // contention (serial fraction)
  double beta = 0;   // coherency (crosstalk)
  double gamma = 0;  // throughput of one user with no contention

  double throughput(double n) const;
};

struct UslFit {
  bool fitted = false;  // false: too few points, no convergence, or R² below kUslMinRSquared
  std::string reason;   // why not, in words, when !fitted
  UslParams params;
  double r_squared = 0;
  std::optional<double> peak_users;       // N* = sqrt((1−α)/β); absent when β is negligible
  std::optional<double> peak_throughput;  // X(N*); or γ/α, the asymptote, when only α counts
  std::size_t points = 0;                 // distinct user counts
};

/// n and x the same length (users > 0, throughput >= 0); points need distinct n.
UslFit fit_usl(const std::vector<double>& n, const std::vector<double>& x);

}  // namespace loadwatch::analysis
