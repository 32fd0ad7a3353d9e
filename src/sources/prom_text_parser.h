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

#include "metrics/exposition.h"
#include "metrics/series_limits.h"

namespace loadwatch {

/// Bounds on what one parse keeps, so an endless or hostile body costs its own size and no
/// more: samples past a cap are still read (a syntax error still fails the parse) but not
/// stored, and counted in PromTextParse::dropped.
struct PromTextLimits {
  /// Sample lines kept (each is one series); later ones are dropped as max_series. Also
  /// bounds the families held while parsing.
  std::size_t max_series = SIZE_MAX;
  std::size_t max_label_name = kMaxLabelNameBytes;     // else label_limit
  std::size_t max_label_value = kMaxLabelValueBytes;   // else label_limit
  std::size_t max_labels = kMaxLabelsPerSeries;        // else label_limit
  std::size_t max_quantiles = kMaxQuantilesPerSeries;  // per summary series
  std::size_t max_buckets = kMaxBucketsPerSeries;      // per histogram series
  std::size_t max_help = kMaxHelpBytes;                // longer HELP is cut
  /// Strict mode, for checking loadwatch's own /metrics: no caps, and besides the format
  /// rules every HELP and label value must be valid UTF-8, no series may appear twice
  /// (sample name and labels, quantile/le included), a family's lines must be contiguous
  /// and its HELP must come before its samples; a `\r` is not forgiven.
  bool strict = false;

  /// Everything, as the format allows it.
  static PromTextLimits unlimited() {
    PromTextLimits l;
    l.max_label_name = l.max_label_value = l.max_labels = l.max_quantiles = l.max_buckets =
        l.max_help = SIZE_MAX;
    return l;
  }
  static PromTextLimits strict_mode() {
    PromTextLimits l = unlimited();
    l.strict = true;
    return l;
  }
};

/// The outcome of parsing one exposition. Plain value; no shared state.
struct PromTextParse {
  /// Families in order of first appearance. Families that got no sample (a HELP/TYPE pair
  /// alone, as Mountebank writes for mb_blocked_ip_total) are dropped. Empty on error.
  std::vector<prometheus::MetricFamily> families;
  /// "line N: message" for the first error; empty on success.
  std::string error;
  /// Sample lines read but not kept, by reason (see PromTextLimits).
  DropCounts dropped;
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
/// Leniency beyond the spec (not in strict mode): a `\r` before the line feed is ignored.
PromTextParse parse_prom_text(std::string_view text, const PromTextLimits& limits);
/// The same with the default PromTextLimits (label and quantile caps, no series cap).
PromTextParse parse_prom_text(std::string_view text);

/// Parses one sample value token (see above). Returns false on anything else.
bool parse_prom_value(std::string_view token, double& out);

}  // namespace loadwatch
