#pragma once
#include <string>
#include <string_view>

namespace loadwatch {

/// Text from outside on one line, with nothing a terminal or a CI log would act on: line
/// breaks and tabs become spaces, other C0 controls, DEL and C1 controls (U+0080..U+009F,
/// such as CSI) become U+FFFD. Everything else is kept as it is.
std::string printable_line(std::string_view s);

}  // namespace loadwatch
