// Readers for the golden fixtures the text tests compare against (case.json and io tensors).
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// The largest |difference| between a Gemma's hidden states and case `name`'s out.hidden_states over
// the rows its in.attention_mask keeps (the pads' rows are not compared).
inline float max_valid_row_diff(const std::vector<Tensor>& states, const std::string& name) {
  const Tensor expected = io_tensor(name, "out.hidden_states"), mask = io_tensor(name, "in.attention_mask");
  if (static_cast<int64_t>(states.size()) != expected.size(0)) return INFINITY;
  float worst = 0;
  for (size_t l = 0; l < states.size(); ++l)
    for (int64_t b = 0; b < mask.size(0); ++b)
      for (int64_t t = 0; t < mask.size(1); ++t)
        if (mask.item_i64({b, t}))
          worst = std::max(worst, max_abs_diff(states[l].select(0, b).select(0, t),
                                               expected.select(0, l).select(0, b).select(0, t)));
  return worst;
}

}  // namespace ltx2::test
