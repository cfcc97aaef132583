// Depth-to-space and space-to-depth over NCDHW tensors. They are pure index permutations, written
// as a strided view plus one contiguous copy, so they run on any device that can copy strided
// tensors.
//
// Channel order (PyTorch's rearrange "b (c p1 p2 p3) d h w -> b c (d p1) (h p2) (w p3)"):
//   out[b, c, d*sD + i, h*sH + j, w*sW + k] = in[b, c*P + i*(sH*sW) + j*sW + k, d, h, w],
// P = sD*sH*sW; the W offset is fastest.
#pragma once

#include <array>

#include "core/tensor.h"

namespace ltx2::ops {

// [B, C*P, D, H, W] -> [B, C, D*sD, H*sH, W*sW].
Tensor depth_to_space(const Tensor& x, const std::array<int64_t, 3>& factors);
// The inverse: [B, C, D*sD, H*sH, W*sW] -> [B, C*P, D, H, W].
Tensor space_to_depth(const Tensor& x, const std::array<int64_t, 3>& factors);

}  // namespace ltx2::ops
