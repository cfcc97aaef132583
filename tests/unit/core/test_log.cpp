#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

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

TEST_CASE("log: JSON lines escape the message, replace bytes that are not UTF-8, and reach workers") {
  init_logging("rank 1");
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  spdlog::default_logger()->sinks().push_back(sink);
  set_log_json(true);
  REQUIRE(std::string(std::getenv("LTX2_LOG_FORMAT")) == "json");  // what a worker's init_logging reads
  log_info("a \"quote\", a \\ backslash, a tab\t, a bad byte \xff, a newline\nend");
  const nlohmann::json line = nlohmann::json::parse(captured.str());  // one valid JSON object
  REQUIRE(line.at("level") == "info");
  REQUIRE(line.at("tag") == "rank 1");
  REQUIRE(line.at("msg") == "a \"quote\", a \\ backslash, a tab\t, a bad byte \xEF\xBF\xBD, a newline\nend");

  // A process started with the variable set logs JSON from its first line.
  captured.str("");
  init_logging();
  log_info("from a worker");
  REQUIRE(nlohmann::json::parse(captured.str()).at("msg") == "from a worker");
  set_log_json(false);
  REQUIRE(std::getenv("LTX2_LOG_FORMAT") == nullptr);
  spdlog::default_logger()->sinks().pop_back();
}
