#include "core/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ltx2 {

namespace {
std::string g_tag;

// `%*`: the message as a JSON string, quotes included: escaped, and bytes that are not UTF-8
// replaced by U+FFFD, so every line stays one valid JSON object whatever the message holds.
class JsonMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string quoted = nlohmann::json(std::string(msg.payload.data(), msg.payload.size()))
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    dest.append(quoted.data(), quoted.data() + quoted.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<JsonMessage>(); }
};

void apply_pattern(bool json) {
  std::string tag = g_tag.empty() ? "" : "[" + g_tag + "] ";
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<JsonMessage>('*');
  if (json) {
    const std::string tag_field =
        g_tag.empty()
            ? ""
            : "\"tag\":" +
                  nlohmann::json(g_tag).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ",";
    formatter->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e","level":"%l",)" + tag_field + R"("msg":%*})");
  } else {
    formatter->set_pattern("%H:%M:%S.%e %^%L%$ " + tag + "%v");
  }
  spdlog::set_formatter(std::move(formatter));
}

// The log format travels to worker processes through the environment they inherit.
constexpr const char* kFormatVariable = "LTX2_LOG_FORMAT";

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::err;
}
}  // namespace

bool log_enabled(LogLevel level) {
  return spdlog::should_log(spdlog_level(level));
}

void log_message(LogLevel level, std::string_view message) {
  spdlog::log(spdlog_level(level), "{}", message);
}

void set_log_level(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept that when it was asked for.
  LTX2_CHECK(lvl != spdlog::level::off || level == "off",
             "unknown log level '{}' (use trace, debug, info, warn, error or off)", level);
  spdlog::set_level(lvl);
}

void init_logging(const std::string& tag) {
  static bool sink_made = false;
  if (!sink_made) {
    auto logger = spdlog::stderr_color_mt("ltx2");
    spdlog::set_default_logger(logger);
    sink_made = true;
  }
  g_tag = tag;
  const char* format = std::getenv(kFormatVariable);
  apply_pattern(format != nullptr && std::string(format) == "json");
  spdlog::set_level(spdlog::level::info);
  if (const char* env = std::getenv("LTX2_LOG_LEVEL"); env && *env) set_log_level(env);
}

void set_log_json(bool json) {
  if (json)
    setenv(kFormatVariable, "json", 1);
  else
    unsetenv(kFormatVariable);
  apply_pattern(json);
}

}  // namespace ltx2
