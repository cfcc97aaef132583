// Nearest-neighbour upsampling of the last two axes of [B, C, H, W] by an integer factor
// (torch interpolate(scale_factor=f, mode="nearest")). CPU: float32.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

// y[b, c, h, w] = x[b, c, h / factor, w / factor] -> [B, C, H * factor, W * factor].
Tensor upsample_nearest2d(const Tensor& x, int64_t factor);

}  // namespace ltx2::ops
