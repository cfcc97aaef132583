// Typed reading of a model's JSON config (from checkpoint metadata) that refuses what it does not
// understand. Each model's config struct (lib/io/configs/) is filled through a ConfigReader:
// every value is type-checked, enumerations are checked against what we implement, and the
// message names the component and the key ("transformer config: 'rope_type' is 'foo'; supported:
// split, interleaved").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ltx2 {

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, std::string component);

  bool has(const std::string& key) const;
  int64_t integer(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  double number(const std::string& key) const;
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  // A string that must be one of `allowed`.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed) const;
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback) const;
  std::vector<int64_t> integers(const std::string& key) const;
  std::vector<int64_t> integers(const std::string& key, const std::vector<int64_t>& fallback) const;
  std::vector<double> numbers(const std::string& key) const;
  // A value that, when present, must equal `expected` (the reference asserts these).
  void require_equal(const std::string& key, const nlohmann::json& expected) const;
  ConfigReader child(const std::string& key) const;
  const nlohmann::json& raw() const { return j_; }
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

 private:
  const nlohmann::json& get(const std::string& key) const;
  nlohmann::json j_;
  std::string component_;
};

}  // namespace ltx2
