// Transposed 1-D convolution over [B, C, L] signals (the vocoders' upsampling layers).
// Weights in PyTorch ConvTranspose1d layout [C_in, C_out / groups, K]. CPU: float32.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

struct ConvTranspose1dOptions {
  int64_t stride = 1;
  int64_t padding = 0;  // trimmed from both ends of the full output
  int64_t groups = 1;
};

// The sizes of one call, after the checks every backend shares (options, ranks, the weight fitting
// the input and groups, the bias, a non-empty output); throws ltx2::Error naming what is wrong.
struct ConvTranspose1dShape {
  int64_t batch, in_channels, length, out_per_group, kernel, out_channels, out_length;
};
ConvTranspose1dShape conv_transpose1d_shape(const Tensor& x, const Tensor& w, const Tensor& bias,
                                            const ConvTranspose1dOptions& opt);

// y[b, o, t * stride + k - padding] += w[i, o - g(i), k] * x[b, i, t] (+ bias[o]).
// x [B, C_in, L], w [C_in, C_out / groups, K] -> [B, C_out, (L - 1) * stride + K - 2 * padding].
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose1dOptions& opt = {});

}  // namespace ltx2::ops
