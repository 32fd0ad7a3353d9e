#pragma once
#include <string>
#include <string_view>

namespace loadwatch {

/// Text safe in HTML element content and in quoted attribute values: & < > " ' as entities.
std::string html_escape(std::string_view s);

}  // namespace loadwatch
