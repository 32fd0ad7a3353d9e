#pragma once
// Kneedle (Satopää, Albrecht, Irwin, Raghavan: "Finding a 'Kneedle' in a Haystack: Detecting
// Knee Points in System Behavior", ICDCS workshops 2011) for a concave increasing curve, as
// throughput against users is. No smoothing: each point is already a phase's mean.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace loadwatch::analysis {

struct KneedleOptions {
  /// S in the paper: how many mean x-steps the difference curve must fall below a local maximum
  /// before that maximum counts as a knee. Smaller finds knees sooner; the paper's default is 1.
  double sensitivity = 1.0;
  /// Offline (false): the first knee found, i.e. where scaling first stops. Online (true): keep
  /// scanning and return the last knee, as the paper's online variant revises its answer when
  /// points arrive.
  bool online = false;
};

struct KneedleResult {
  std::optional<std::size_t> knee;  // index into the input points
  std::vector<std::size_t> all_knees;
  std::vector<double> difference;  // the normalised difference curve y_n - x_n
};

/// x strictly increasing, y the same length. Fewer than 3 points, or a flat y, give no knee.
KneedleResult kneedle(const std::vector<double>& x, const std::vector<double>& y,
                      const KneedleOptions& options = {});

}  // namespace loadwatch::analysis
