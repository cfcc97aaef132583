// Logging through spdlog. The level comes from LTX2_LOG_LEVEL (trace, debug, info, warn, error,
// off; default info) and can be overridden by apps; LTX2_LOG_FORMAT=json gives JSON lines. Logs go to stderr so stdout stays for results.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace ltx2 {

// Sets up the default logger once; safe to call more than once. `tag` prefixes each line
// (e.g. "rank 2" in workers).
void init_logging(const std::string& tag = "");
// Applies a level name; throws ltx2::Error on an unknown name.
void set_log_level(const std::string& level);
// JSON lines instead of plain text (for --log-format json): one object per line, the message
// escaped (bytes that are not UTF-8 become U+FFFD). Also for the worker processes started after
// it (through LTX2_LOG_FORMAT in their environment; init_logging reads it).
void set_log_json(bool json);

}  // namespace ltx2
