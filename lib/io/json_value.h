// Reading a request's JSON scalars without silent narrowing. nlohmann's get<int>() truncates a
// float (1.5 -> 1), wraps an integer too large for the type (2^32 + 64 -> 64) and is undefined for
// a float outside it (1e30); these readers refuse each, naming the field.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ltx2 {

// A JSON integer, or a float that is a whole number, within [min, max].
int64_t json_integer(const nlohmann::json& j, const std::string& field, int64_t min, int64_t max);

template <typename T>
T json_integer(const nlohmann::json& j, const std::string& field) {
  return static_cast<T>(json_integer(j, field, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

// A JSON array of such integers, each within T's range.
void require_json_array(const nlohmann::json& j, const std::string& field);
template <typename T>
std::vector<T> json_integers(const nlohmann::json& j, const std::string& field) {
  require_json_array(j, field);
  std::vector<T> out;
  for (const nlohmann::json& v : j) out.push_back(json_integer<T>(v, field));
  return out;
}

// Any JSON number (its range is the request validation's to check).
double json_number(const nlohmann::json& j, const std::string& field);

}  // namespace ltx2
