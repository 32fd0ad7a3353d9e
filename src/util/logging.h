#pragma once
// spdlog set up for logfmt or JSON lines on stderr (--log.level, --log.format).

#include <string>

namespace loadwatch {

/// Configures the default spdlog logger. Throws std::invalid_argument on an unknown
/// level or format.
void setup_logging(const std::string& level, const std::string& format);

}  // namespace loadwatch
