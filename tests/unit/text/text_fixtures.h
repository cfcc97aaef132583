// Readers for the golden fixtures the text tests compare against (case.json and io tensors).
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/safetensors.h"
#include "support/test_util.h"

namespace ltx2::test {

inline nlohmann::json case_json(const std::string& name) {
  std::ifstream in(golden_dir(name) + "/case.json");
  return nlohmann::json::parse(in);
}

// An io tensor of a case, copied out of the mapping.
inline Tensor io_tensor(const std::string& name, const std::string& tensor) {
  return SafetensorsFile::open(golden_dir(name) + "/io.safetensors")->tensor(tensor).clone();
}

}  // namespace ltx2::test
