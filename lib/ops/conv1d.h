// 1-D convolution over [B, C, L] signals (the vocoders' convs and the BWE's STFT), zero padded.
// Weights in PyTorch Conv1d layout [C_out, C_in / groups, K]. CPU: float32.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

struct Conv1dOptions {
  int64_t stride = 1;
  int64_t pad_left = 0;  // zeros before the first sample
  int64_t pad_right = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
};

// y[b, o, t] = bias[o] + sum_{i, k} w[o, i, k] * x_padded[b, g(o) + i, t * stride + k * dilation].
// x [B, C_in, L], w [C_out, C_in / groups, K], bias [C_out] or undefined -> [B, C_out, L_out].
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& opt = {});

// The output length of conv1d for an input of length `length` and kernel size `kernel`.
int64_t conv1d_output_length(int64_t length, int64_t kernel, const Conv1dOptions& opt);

}  // namespace ltx2::ops
