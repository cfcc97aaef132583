#include "io/config_reader.h"

#include "core/error.h"

namespace ltx2 {

using json = nlohmann::json;

ConfigReader::ConfigReader(const json& j, std::string component)
    : j_(j), component_(std::move(component)) {
  LTX2_CHECK(j_.is_object(), "{} config is not a JSON object", component_);
}

void ConfigReader::fail(const std::string& key, const std::string& why) const {
  LTX2_FAIL("{} config: '{}' {}", component_, key, why);
}

bool ConfigReader::has(const std::string& key) const {
  return j_.contains(key) && !j_.at(key).is_null();
}

const json& ConfigReader::get(const std::string& key) const {
  if (!has(key)) fail(key, "is missing");
  return j_.at(key);
}

int64_t ConfigReader::integer(const std::string& key) const {
  const json& v = get(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())))
    return static_cast<int64_t>(v.get<double>());
  fail(key, "is " + v.dump() + ", expected an integer");
}
int64_t ConfigReader::integer(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

double ConfigReader::number(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_number()) fail(key, "is " + v.dump() + ", expected a number");
  return v.get<double>();
}
double ConfigReader::number(const std::string& key, double fallback) const {
  return has(key) ? number(key) : fallback;
}

bool ConfigReader::boolean(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_boolean()) fail(key, "is " + v.dump() + ", expected true or false");
  return v.get<bool>();
}
bool ConfigReader::boolean(const std::string& key, bool fallback) const {
  return has(key) ? boolean(key) : fallback;
}

std::string ConfigReader::string(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_string()) fail(key, "is " + v.dump() + ", expected a string");
  return v.get<std::string>();
}
std::string ConfigReader::string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

std::string ConfigReader::choice(const std::string& key, const std::vector<std::string>& allowed) const {
  std::string v = string(key);
  for (const auto& a : allowed)
    if (v == a) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "is '" + v + "'; supported: " + list);
}
std::string ConfigReader::choice(const std::string& key, const std::vector<std::string>& allowed,
                                 const std::string& fallback) const {
  return has(key) ? choice(key, allowed) : fallback;
}

std::vector<int64_t> ConfigReader::integers(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_array()) fail(key, "is " + v.dump() + ", expected a list of integers");
  std::vector<int64_t> out;
  for (const auto& e : v) {
    if (!e.is_number_integer()) fail(key, "is " + v.dump() + ", expected a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}
std::vector<int64_t> ConfigReader::integers(const std::string& key,
                                            const std::vector<int64_t>& fallback) const {
  return has(key) ? integers(key) : fallback;
}

std::vector<double> ConfigReader::numbers(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_array()) fail(key, "is " + v.dump() + ", expected a list of numbers");
  std::vector<double> out;
  for (const auto& e : v) {
    if (!e.is_number()) fail(key, "is " + v.dump() + ", expected a list of numbers");
    out.push_back(e.get<double>());
  }
  return out;
}

void ConfigReader::require_equal(const std::string& key, const json& expected) const {
  if (!has(key)) return;
  if (j_.at(key) != expected)
    fail(key, "is " + j_.at(key).dump() + "; only " + expected.dump() + " is supported");
}

ConfigReader ConfigReader::child(const std::string& key) const {
  const json& v = get(key);
  if (!v.is_object()) fail(key, "is not an object");
  return ConfigReader(v, component_ + "." + key);
}

}  // namespace ltx2
