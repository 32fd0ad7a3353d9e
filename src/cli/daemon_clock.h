#pragma once
// How far a loadwatch's clock is from the reader's: its answers carry its time ("time", unix
// seconds), taken somewhere between the request leaving and the answer arriving, so the skew
// is known to within half the round trip.

#include <optional>
#include <string>

#include "cli/run_client.h"

namespace loadwatch {

struct ClockSkew {
  double seconds = 0;      // the loadwatch's clock minus the reader's
  double uncertainty = 0;  // half the round trip, plus the answer's millisecond rounding
};

/// The skew an answer shows; nullopt when it carries no "time" (an older loadwatch).
std::optional<ClockSkew> skew_from_answer(const RunAnswer& answer);

/// The skew from the quickest of `tries` small requests (the first also opens the
/// connection); nullopt with `why` when none answered with a time.
std::optional<ClockSkew> measure_skew(const RunClient& client, std::string* why, int tries = 3);

}  // namespace loadwatch
