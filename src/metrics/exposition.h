#pragma once
// The text exposition format 0.0.4 as loadwatch writes it: name rules, UTF-8, escaping and
// the serializer behind /metrics.
//
// Why not prometheus-cpp's TextSerializer: it writes label values and HELP as they come, so
// invalid UTF-8 from a pushed or scraped name made the page invalid, and it is 4 x slower:
// 8.4 ms against 34.5 ms for the same 1.47 MB page of 14,000 series (bench/page_guard_bench,
// which also checks that both write the same bytes; docs/benchmarks.md).

#include <prometheus/metric_family.h>

#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// True for a valid metric name [a-zA-Z_:][a-zA-Z0-9_:]*.
bool valid_metric_name(std::string_view name);
/// True for a valid label name [a-zA-Z_][a-zA-Z0-9_]*.
bool valid_label_name(std::string_view name);

/// Length of the well-formed UTF-8 sequence at text[i] (1 for ASCII), 0 when there is none:
/// no overlong forms, surrogates or code points past U+10FFFF (RFC 3629).
std::size_t utf8_char_length(std::string_view text, std::size_t i);
/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), as Prometheus requires of label values and HELP.
bool valid_utf8(std::string_view text);
/// Replaces each byte that does not start a well-formed UTF-8 sequence with U+FFFD (as
/// Python's errors="replace" per byte). Returns true when something was replaced.
bool replace_invalid_utf8(std::string& text);
/// True when `text` takes at most `max_bytes` once replace_invalid_utf8 has run: each byte that
/// starts no well-formed sequence takes U+FFFD's three. A cap on text that /metrics writes
/// repaired is a cap on that size. Scans only text over a third of `max_bytes`, and stops
/// once past it.
bool fits_once_repaired(std::string_view text, std::size_t max_bytes);
/// Cuts `text` to at most `max_bytes` without splitting a UTF-8 sequence.
void truncate_utf8(std::string& text, std::size_t max_bytes);

/// Serializes families as /metrics does. Escaping happens here and only here: HELP gets
/// `\\` and `\n`, label values `\\`, `\"` and `\n`; producers keep raw text. Invalid UTF-8
/// in HELP or a label value is written as U+FFFD (the sampler's guard has normally replaced
/// and counted it already). Numbers are written as prometheus-cpp 1.0.1's TextSerializer
/// writes them, so the page is byte-for-byte what it was for valid input.
std::string serialize_text(const std::vector<prometheus::MetricFamily>& families);
/// Appends a label value escaped, and a number (a value, or a quantile or le bound), as
/// serialize_text writes them: for keys that must read like the page (the history's).
void append_escaped_label_value(std::string& out, std::string_view value);
void append_number(std::string& out, double value);

}  // namespace loadwatch
