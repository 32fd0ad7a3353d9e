#include "util/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <stdexcept>

#include "util/log.h"

namespace loadwatch {

namespace {

// logfmt and JSON need the message escaped, which spdlog patterns cannot do: a formatter.
class LineFormatter : public spdlog::formatter {
 public:
  explicit LineFormatter(bool json) : json_(json) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto t = std::chrono::system_clock::to_time_t(msg.time);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count() %
        1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[64];
    std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms));
    auto level = spdlog::level::to_string_view(msg.level);
    std::string text(msg.payload.data(), msg.payload.size());
    std::string line;
    if (json_) {
      line = std::string("{\"ts\":\"") + ts + "\",\"level\":\"" +
             std::string(level.data(), level.size()) + "\",\"msg\":\"" + escape(text) + "\"}\n";
    } else {
      line = std::string("ts=") + ts + " level=" + std::string(level.data(), level.size()) +
             " msg=\"" + escape(text) + "\"\n";
    }
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<LineFormatter>(json_);
  }

 private:
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
          } else {
            out += c;
          }
      }
    }
    return out;
  }
  bool json_;
};

}  // namespace

void setup_logging(const std::string& level, const std::string& format) {
  spdlog::level::level_enum lvl;
  if (level == "debug")
    lvl = spdlog::level::debug;
  else if (level == "info")
    lvl = spdlog::level::info;
  else if (level == "warn")
    lvl = spdlog::level::warn;
  else if (level == "error")
    lvl = spdlog::level::err;
  else
    throw std::invalid_argument("unknown log level \"" + level + "\" (debug, info, warn, error)");
  if (format != "logfmt" && format != "json") {
    throw std::invalid_argument("unknown log format \"" + format + "\" (logfmt, json)");
  }
  auto logger = std::make_shared<spdlog::logger>("loadwatch",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_formatter(std::make_unique<LineFormatter>(format == "json"));
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

}  // namespace loadwatch
