#pragma once
// URL decoding of request targets and query strings (application/x-www-form-urlencoded).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace loadwatch {

/// %XX escapes decoded (a '%' not followed by two hex digits stays as it is); with
/// `plus_is_space`, '+' becomes ' ' (query strings, not paths).
std::string url_decode(std::string_view in, bool plus_is_space);

/// The decoded values of `name` in a query ("a=1&b=2&a=3"), in order, at most `max`. Names
/// match case-insensitively; a parameter without '=' has no value and is not listed.
std::vector<std::string> query_values(std::string_view query, std::string_view name,
                                      std::size_t max);

}  // namespace loadwatch
