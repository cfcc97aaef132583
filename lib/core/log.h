// Logging. The level comes from LTX2_LOG_LEVEL (trace, debug, info, warn, error, off; default
// info) and can be overridden by apps; LTX2_LOG_FORMAT=json gives JSON lines. Logs go to stderr so
// stdout stays for results.
//
// spdlog writes the lines, but only log.cpp includes it: this header is the whole interface (fmt
// formatting, checked at compile time, and one call into log.cpp), so a file that logs does not
// compile spdlog's headers, which cost several seconds per file on a 2-core machine.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>

namespace ltx2 {

enum class LogLevel { trace, debug, info, warn, error };

// Sets up the default logger once; safe to call more than once. `tag` prefixes each line
// (e.g. "rank 2" in workers).
void init_logging(const std::string& tag = "");
// Applies a level name; throws ltx2::Error on an unknown name.
void set_log_level(const std::string& level);
// JSON lines instead of plain text (for --log-format json): one object per line, the message
// escaped (bytes that are not UTF-8 become U+FFFD). Also for the worker processes started after
// it (through LTX2_LOG_FORMAT in their environment; init_logging reads it).
void set_log_json(bool json);

// Whether a message at `level` is written (the arguments are formatted only then).
bool log_enabled(LogLevel level);
// Writes one message at `level`.
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log_at(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_message(level, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void log_trace(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::trace, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::debug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::info, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::warn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::error, format, std::forward<Args>(args)...);
}

}  // namespace ltx2
