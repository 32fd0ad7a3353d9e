#pragma once
// Parser of the Prometheus text exposition format 0.0.4, for re-exporting pull sources.
//
// Debian 12 ships no library for this (prometheus-cpp only serialises), so it is ours. It
// follows the format spec (https://prometheus.io/docs/instrumenting/exposition_formats/) and
// groups samples into families the way Go's expfmt.TextParser does.

#include <prometheus/metric_family.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// The outcome of parsing one exposition. Plain value; no shared state.
struct PromTextParse {
  /// Families in order of first appearance. Families that got no sample (a HELP/TYPE pair
  /// alone, as Mountebank writes for mb_blocked_ip_total) are dropped. Empty on error.
  std::vector<prometheus::MetricFamily> families;
  /// "line N: message" for the first error; empty on success.
  std::string error;
  bool ok() const { return error.empty(); }
};

/// Parses a whole exposition. Pure and reentrant; never throws except std::bad_alloc, never
/// reads outside `text`. The first malformed line fails the whole parse (as Prometheus
/// fails a scrape), with its 1-based line number in `error`.
///
/// What it accepts, per the spec:
/// - `# HELP name docstring` (escapes `\\` and `\n`), `# TYPE name counter|gauge|histogram|
///   summary|untyped`; TYPE must come before the family's samples and at most once; other
///   `#` lines are comments.
/// - `name{label="value",...} value [timestamp_ms]`, label values with escapes `\\`, `\"`,
///   `\n`; a trailing comma in the label set; blanks (space, tab) between tokens.
/// - Values as Go's ParseFloat reads them in practice: decimal/exponent, `NaN`, `+Inf`,
///   `-Inf` (case-insensitive, optional `+`). Timestamps: int64 milliseconds.
/// - Summary samples `name{quantile=...}`, `name_sum`, `name_count` and histogram samples
///   `name_bucket{le=...}`, `name_sum`, `name_count` are grouped into the family `name` and
///   into one metric per label set (without quantile/le).
/// Leniency beyond the spec: a `\r` before the line feed is ignored (CRLF bodies).
PromTextParse parse_prom_text(std::string_view text);

/// Parses one sample value token (see above). Returns false on anything else.
bool parse_prom_value(std::string_view token, double& out);

/// HELP text escaped for the exposition format (`\` -> `\\`, newline -> `\n`).
/// prometheus-cpp 1.0.1's TextSerializer writes HELP verbatim, so families re-exported
/// from a source (whose HELP parse_prom_text unescaped) carry it escaped, or a backslash or
/// newline in an upstream HELP would break /metrics.
std::string escape_help(std::string_view help);

/// True for a valid metric name [a-zA-Z_:][a-zA-Z0-9_:]*.
bool valid_metric_name(std::string_view name);
/// True for a valid label name [a-zA-Z_][a-zA-Z0-9_]*.
bool valid_label_name(std::string_view name);

}  // namespace loadwatch
