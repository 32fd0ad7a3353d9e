#pragma once
// A Prometheus label matcher set as `report --prometheus --match` takes it:
// {job="loadwatch",env=~"perf|soak"}. It narrows every query of the report, so it is checked
// here and written back in one canonical form rather than pasted into PromQL as typed.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace loadwatch::report {

/// The longest matcher set accepted, in bytes as typed (docs/limits.md).
inline constexpr std::size_t kMaxMatcherBytes = 1024;
/// The most matchers in one set.
inline constexpr std::size_t kMaxMatchers = 16;

struct LabelMatcherError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Parses `{name OP "value", ...}` (the braces may be left out; OP is =, !=, =~ or !~; values
/// in double or single quotes or backticks, with PromQL's escapes) and returns the matchers
/// without braces, each as name OP "value" with the value re-escaped, joined by commas: ready
/// to go inside a selector's braces. Empty in, empty out. Throws LabelMatcherError naming the
/// position and what is wrong; `__name__` is refused (the report chooses the families).
std::string parse_label_matchers(std::string_view text);

}  // namespace loadwatch::report
