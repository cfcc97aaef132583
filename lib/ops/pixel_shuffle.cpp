// Depth-to-space / space-to-depth as a reshaped, permuted view plus one contiguous copy. Not under
// cpu/: only views and Tensor::contiguous() are used, which work on every device.
#include "ops/pixel_shuffle.h"

#include "core/error.h"

namespace ltx2::ops {

Tensor depth_to_space(const Tensor& x, const std::array<int64_t, 3>& f) {
  LTX2_CHECK(x.dim() == 5, "depth_to_space: 5-d [B, C, D, H, W] expected, got {}", x.str());
  const int64_t P = f[0] * f[1] * f[2];
  LTX2_CHECK(P > 0 && x.size(1) % P == 0, "depth_to_space: {} channels not divisible by {}", x.size(1), P);
  const int64_t B = x.size(0), C = x.size(1) / P, D = x.size(2), H = x.size(3), W = x.size(4);
  // [B, C, sD, sH, sW, D, H, W] -> [B, C, D, sD, H, sH, W, sW]
  Tensor v = x.contiguous().view({B, C, f[0], f[1], f[2], D, H, W}).permute({0, 1, 5, 2, 6, 3, 7, 4});
  return v.contiguous().view({B, C, D * f[0], H * f[1], W * f[2]});
}

Tensor space_to_depth(const Tensor& x, const std::array<int64_t, 3>& f) {
  LTX2_CHECK(x.dim() == 5, "space_to_depth: 5-d [B, C, D, H, W] expected, got {}", x.str());
  LTX2_CHECK(f[0] > 0 && f[1] > 0 && f[2] > 0 && x.size(2) % f[0] == 0 && x.size(3) % f[1] == 0 &&
                 x.size(4) % f[2] == 0,
             "space_to_depth: {} not divisible by factors ({}, {}, {})", x.str(), f[0], f[1], f[2]);
  const int64_t B = x.size(0), C = x.size(1);
  const int64_t D = x.size(2) / f[0], H = x.size(3) / f[1], W = x.size(4) / f[2];
  // [B, C, D, sD, H, sH, W, sW] -> [B, C, sD, sH, sW, D, H, W]
  Tensor v = x.contiguous().view({B, C, D, f[0], H, f[1], W, f[2]}).permute({0, 1, 3, 5, 7, 2, 4, 6});
  return v.contiguous().view({B, C * f[0] * f[1] * f[2], D, H, W});
}

}  // namespace ltx2::ops
