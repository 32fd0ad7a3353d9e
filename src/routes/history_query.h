#pragma once
// The query of GET /api/v1/history: ?series=a,b{x="1"}&since=T&until=T&rate=0|1.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "history/history.h"

namespace loadwatch {

/// Most names one request may give (docs/history.md).
constexpr std::size_t kHistoryMaxSeriesPerRequest = 100;

/// Splits "a,b{x=\"1\",y=\"2\"},c" at the commas outside braces and quotes.
std::vector<std::string> split_series(const std::string& s);

/// Reads the query through `param` (a parameter's decoded value, empty when absent) into `q`.
/// Returns the message of a 400 naming the parameter (quoting at most 64 bytes of the
/// client's value, which may be any bytes), or nullopt when `q` is complete.
std::optional<std::string> read_history_query(
    const std::function<std::string(const std::string&)>& param, HistoryQuery& q);

}  // namespace loadwatch
