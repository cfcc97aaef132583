// 3-D neighborhood attention (NATTEN na3d semantics) and the absolute per-axis RoPE of the
// diffusion video decoder's attention (reference: transformer/fallback_na/eager.py, rope_math.py),
// composed from lib/ops (ops::attention on query tiles with an additive window mask), so the same
// code runs on every backend.
//
// Window: along an axis of length L with kernel k (clamped to L, as the reference's eager na3d
// does), query i attends keys [s, s + k) with s = clamp(i - k/2, 0, L - k): centred, shifted inward
// at the borders (no padding).
// RoPE: a head's channels split (d_t, d_h, d_w); within each part, pair (2j, 2j+1) rotates by
// pos * inv_j, inv_j = 1 / 10000^(2j / d) (float64, then float32), the angle a float32 product.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "io/configs/diffusion_video_decoder_config.h"

namespace ltx2::video_vae {

// q, k, v [B, T, H, W, heads, D] (q already scaled: softmax(q·k) with no further scale)
// -> [B, T, H, W, heads, D].
Tensor neighborhood_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Dims3& kernel);

// Positions of the three axes (float32 values; the W axis of a chunk may start below 0).
struct AxisPositions {
  std::vector<float> t, h, w;
};
// 0, 1, ..., n-1 on each axis.
AxisPositions axis_positions(int64_t t, int64_t h, int64_t w);

// Rotates x [B, T, H, W, heads, D], D = split[0] + split[1] + split[2], by the positions.
Tensor axial_rope(const Tensor& x, const Dims3& split, const AxisPositions& pos);

}  // namespace ltx2::video_vae
