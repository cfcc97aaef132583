#include <cstdlib>

#include "core/error.h"
#include "core/log.h"
#include "support/catch.h"

using namespace ltx2;

TEST_CASE("log: LTX2_LOG_LEVEL sets the level, unknown names are refused") {
  setenv("LTX2_LOG_LEVEL", "warn", 1);
  init_logging();
  REQUIRE(spdlog::get_level() == spdlog::level::warn);
  unsetenv("LTX2_LOG_LEVEL");
  init_logging();
  REQUIRE(spdlog::get_level() == spdlog::level::info);
  REQUIRE_THROWS_AS(set_log_level("loud"), Error);
  set_log_level("off");
  REQUIRE(spdlog::get_level() == spdlog::level::off);
  set_log_level("info");
}
