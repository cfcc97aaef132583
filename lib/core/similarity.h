// Whole-tensor similarity for reduced-precision paths (FP8 linears, 8-bit attention), where an
// element-wise bound says little: relative L2 error ||a - b|| / ||b|| and cosine similarity, in
// double, on the host. Used by the tests and by `ltx2 bench transformer`.
#pragma once

#include <cmath>
#include <vector>

#include "core/tensor.h"

namespace ltx2 {

struct Similarity {
  double rel_l2 = INFINITY, cosine = 0;
};

// `got` against `want` (same shape; either device and any float dtype). A NaN or a shape mismatch
// gives rel_l2 = infinity and cosine = 0, which no bound accepts.
inline Similarity similarity(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return {};
  const std::vector<float> a = got.to(Device::cpu()).to(DType::F32).to_vector();
  const std::vector<float> b = want.to(Device::cpu()).to(DType::F32).to_vector();
  double diff = 0, aa = 0, bb = 0, ab = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
    ab += double(a[i]) * b[i];
  }
  if (std::isnan(diff) || std::isnan(ab) || bb == 0 || aa == 0) return {};
  return {std::sqrt(diff / bb), ab / std::sqrt(aa * bb)};
}

}  // namespace ltx2
