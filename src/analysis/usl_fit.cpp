#include "analysis/usl_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <unsupported/Eigen/LevenbergMarquardt>

namespace loadwatch::analysis {

double UslParams::throughput(double n) const {
  return gamma * n / (1 + alpha * (n - 1) + beta * n * (n - 1));
}

namespace {

constexpr int kUslMaxEvaluations = 100;  // per start: converging starts take < 40

UslParams from_free(const Eigen::VectorXd& p) {
  double sa = std::sin(p[0]), sb = std::sin(p[1]);
  return {sa * sa, sb * sb, p[2] * p[2]};
}

Eigen::VectorXd to_free(const UslParams& u) {
  Eigen::VectorXd p(3);
  p << std::asin(std::sqrt(std::clamp(u.alpha, 0.0, 1.0))),
      std::asin(std::sqrt(std::clamp(u.beta, 0.0, 1.0))), std::sqrt(std::max(u.gamma, 0.0));
  return p;
}

/// Residuals X(N_i) − x_i and their Jacobian in the free parameters, for Eigen's LM.
struct UslResiduals : Eigen::DenseFunctor<double> {
  const std::vector<double>& n;
  const std::vector<double>& x;
  UslResiduals(const std::vector<double>& n_, const std::vector<double>& x_)
      : Eigen::DenseFunctor<double>(3, static_cast<int>(n_.size())), n(n_), x(x_) {}

  int operator()(const InputType& p, ValueType& r) const {
    UslParams u = from_free(p);
    for (std::size_t i = 0; i < n.size(); ++i) r[i] = u.throughput(n[i]) - x[i];
    return 0;
  }

  int df(const InputType& p, JacobianType& jac) const {
    UslParams u = from_free(p);
    double dalpha = std::sin(2 * p[0]), dbeta = std::sin(2 * p[1]), dgamma = 2 * p[2];
    for (std::size_t i = 0; i < n.size(); ++i) {
      double N = n[i];
      double den = 1 + u.alpha * (N - 1) + u.beta * N * (N - 1);
      double xm = u.gamma * N / den;
      jac(i, 0) = -xm * (N - 1) / den * dalpha;
      jac(i, 1) = -xm * N * (N - 1) / den * dbeta;
      jac(i, 2) = N / den * dgamma;
    }
    return 0;
  }
};

double sum_squares(const std::vector<double>& n, const std::vector<double>& x, const UslParams& u) {
  double s = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    double r = u.throughput(n[i]) - x[i];
    s += r * r;
  }
  return s;
}

/// A starting point from the linearised law: with γ fixed, N/C − 1 = α(N−1) + βN(N−1) where
/// C = X/γ, which is linear in (α, β).
UslParams linearised_start(const std::vector<double>& n, const std::vector<double>& x) {
  std::size_t first = std::min_element(n.begin(), n.end()) - n.begin();
  double gamma = x[first] / n[first];
  for (std::size_t i = 0; i < n.size(); ++i) gamma = std::max(gamma, x[i] / n[i]);
  Eigen::MatrixXd a(n.size(), 2);
  Eigen::VectorXd b(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    double c = std::max(x[i], 1e-12) / gamma;
    a(i, 0) = n[i] - 1;
    a(i, 1) = n[i] * (n[i] - 1);
    b[i] = n[i] / c - 1;
  }
  Eigen::Vector2d ab = a.colPivHouseholderQr().solve(b);
  auto inside = [](double v) { return std::isfinite(v) ? std::clamp(v, 1e-6, 0.9) : 0.01; };
  return {inside(ab[0]), inside(ab[1]), gamma};
}

std::string format_reason(const char* fmt, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

}  // namespace

UslFit fit_usl(const std::vector<double>& n, const std::vector<double>& x) {
  UslFit fit;
  const std::size_t count = std::min(n.size(), x.size());
  std::set<double> distinct(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(count));
  fit.points = distinct.size();
  if (distinct.size() < kUslMinPoints) {
    fit.reason =
        format_reason("too few phases: %g distinct user counts, the fit needs %g",
                      static_cast<double>(distinct.size()), static_cast<double>(kUslMinPoints));
    return fit;
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!(n[i] > 0) || !(x[i] >= 0) || !std::isfinite(n[i]) || !std::isfinite(x[i])) {
      fit.reason = "users must be positive and throughput non-negative";
      return fit;
    }
  }
  const std::vector<double> ns(n.begin(), n.begin() + static_cast<std::ptrdiff_t>(count));
  const std::vector<double> xs(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(count));

  // A few starts guard against a local minimum: the linearised estimate, and a small grid that
  // puts the peak N* at the largest user count and at a quarter of it.
  UslParams lin = linearised_start(ns, xs);
  std::vector<UslParams> starts = {lin};
  const double n_max = *std::max_element(ns.begin(), ns.end());
  for (double a : {0.001, 0.1}) {
    for (double peak : {n_max, n_max / 4}) {
      starts.push_back({a, std::min(0.5, 1 / (peak * peak)), lin.gamma});
    }
  }
  UslResiduals residuals(ns, xs);
  std::optional<UslParams> best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (const UslParams& start : starts) {
    Eigen::VectorXd p = to_free(start);
    Eigen::LevenbergMarquardt<UslResiduals> lm(residuals);
    lm.setMaxfev(kUslMaxEvaluations);
    if (lm.minimizeInit(p) == Eigen::LevenbergMarquardtSpace::ImproperInputParameters) continue;
    // Eigen's own stopping tests, plus one for a crawl: at a bound (alpha = 0, say) the
    // transformed gradient vanishes and each step gains almost nothing, so five steps in a row
    // that improve the residual norm by less than 1e-9 end the run there.
    double previous = std::numeric_limits<double>::infinity();
    for (int stalled = 0; stalled < 5;) {
      if (lm.minimizeOneStep(p) != Eigen::LevenbergMarquardtSpace::Running) break;
      stalled = previous - lm.fnorm() <= 1e-9 * previous ? stalled + 1 : 0;
      previous = lm.fnorm();
    }
    UslParams u = from_free(p);
    double sse = sum_squares(ns, xs, u);
    if (std::isfinite(sse) && sse < best_sse) {
      best_sse = sse;
      best = u;
    }
  }
  if (!best) {
    fit.reason = "the least-squares fit did not converge";
    return fit;
  }

  double mean = 0;
  for (double v : xs) mean += v;
  mean /= static_cast<double>(xs.size());
  double sst = 0;
  for (double v : xs) sst += (v - mean) * (v - mean);
  fit.params = *best;
  fit.r_squared = sst > 0 ? 1 - best_sse / sst : 0;
  if (fit.r_squared < kUslMinRSquared) {
    fit.reason = format_reason("poor fit: R² %.3f is below %.2f", fit.r_squared, kUslMinRSquared);
    return fit;
  }
  fit.fitted = true;
  const UslParams& u = fit.params;
  if (u.beta > kUslNegligible) {
    fit.peak_users = std::sqrt((1 - u.alpha) / u.beta);
    fit.peak_throughput = u.throughput(*fit.peak_users);
  } else if (u.alpha > kUslNegligible) {
    fit.peak_throughput = u.gamma / u.alpha;  // never reached: throughput levels off towards it
  }
  return fit;
}

}  // namespace loadwatch::analysis
