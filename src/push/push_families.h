#pragma once
// HELP texts of the loadwatch_push_* families every push model exports (JMeter over Graphite
// and Influx, the Locust listener), written once so that one page has one HELP per family.

namespace loadwatch {

inline constexpr const char* kPushLinesHelp =
    "Lines received from push sources (a Locust listener push counts as one).";
inline constexpr const char* kPushRejectedHelp =
    "Lines not (fully) used: parse (malformed), too_long, unknown (not JMeter-shaped), stale "
    "(older than the source's last push), or a cap: max_sources, max_transactions, max_series, "
    "max_quantiles, label_limit.";
inline constexpr const char* kPushLastHelp =
    "Unix time this push source last delivered data loadwatch could use.";

}  // namespace loadwatch
