#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "core/error.h"

namespace ltx2 {

namespace {
std::string g_tag;

void apply_pattern(bool json) {
  std::string tag = g_tag.empty() ? "" : "[" + g_tag + "] ";
  if (json) {
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e","level":"%l",)" +
                        std::string(g_tag.empty() ? "" : "\"tag\":\"" + g_tag + "\",") +
                        R"("msg":"%v"})");
  } else {
    spdlog::set_pattern("%H:%M:%S.%e %^%L%$ " + tag + "%v");
  }
}
}  // namespace

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
  apply_pattern(false);
  spdlog::set_level(spdlog::level::info);
  if (const char* env = std::getenv("LTX2_LOG_LEVEL"); env && *env) set_log_level(env);
}

void set_log_json(bool json) { apply_pattern(json); }

}  // namespace ltx2
