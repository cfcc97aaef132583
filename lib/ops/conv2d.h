// 2-D convolution with stride 1 and explicit, possibly asymmetric, zero padding over [B, C, H, W]
// (the audio VAE's causal convs pad the time axis on one side only). Weights in PyTorch Conv2d
// layout [C_out, C_in, kH, kW]. CPU: float32.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

struct Conv2dPadding {
  int64_t top = 0, bottom = 0;  // H (dim 2)
  int64_t left = 0, right = 0;  // W (dim 3)
};

// y[b, o, h, w] = bias[o] + sum_{i, p, q} w[o, i, p, q] * x_padded[b, i, h + p, w + q].
// x [B, C_in, H, W], w [C_out, C_in, kH, kW], bias [C_out] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dPadding& pad = {});

}  // namespace ltx2::ops
