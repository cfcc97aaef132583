#include "io/json_value.h"

#include <cmath>

#include "core/error.h"

namespace ltx2 {

int64_t json_integer(const nlohmann::json& j, const std::string& field, int64_t min, int64_t max) {
  LTX2_CHECK(j.is_number(), "field '{}': must be an integer, got {}", field, j.type_name());
  const auto out_of_range = [&](const std::string& value) {
    return fmt::format("field '{}': {} is out of range [{}, {}]", field, value, min, max);
  };
  if (j.is_number_unsigned()) {
    const auto v = j.get<uint64_t>();
    LTX2_CHECK(v <= static_cast<uint64_t>(max), "{}", out_of_range(std::to_string(v)));
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) {
    const auto v = j.get<int64_t>();
    LTX2_CHECK(v >= min && v <= max, "{}", out_of_range(std::to_string(v)));
    return v;
  }
  const double v = j.get<double>();
  LTX2_CHECK(std::isfinite(v) && v == std::floor(v), "field '{}': must be an integer, got {}", field,
             j.dump());
  // Compared as doubles: 2^63 is exact there, so nothing at or beyond the int64 range converts.
  LTX2_CHECK(v >= static_cast<double>(min) && v <= static_cast<double>(max) && v < 0x1p63, "{}",
             out_of_range(j.dump()));
  return static_cast<int64_t>(v);
}

void require_json_array(const nlohmann::json& j, const std::string& field) {
  LTX2_CHECK(j.is_array(), "field '{}': must be an array of integers, got {}", field, j.type_name());
}

double json_number(const nlohmann::json& j, const std::string& field) {
  LTX2_CHECK(j.is_number(), "field '{}': must be a number, got {}", field, j.type_name());
  return j.get<double>();
}

}  // namespace ltx2
