// Filtered integer-ratio resampling of [B, C, L] signals, one shared FIR filter applied to every
// channel, edges extended by replication (BigVGAN v2's anti-aliased activations and the LTX-2.3
// bandwidth extension's sinc resampler). CPU: float32.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

// Upsampling by `ratio`: replicate-pad `pad` samples on both sides, transposed convolution with
// `filter` [K] at stride `ratio`, times `ratio`, then drop `crop_left` / `crop_right` samples:
// length (L + 2 pad - 1) * ratio + K - crop_left - crop_right.
Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right);

// Low-pass filtering and decimation by `stride`: replicate-pad `pad_left` / `pad_right` samples,
// then convolve with `filter` [K] at that stride: length (L + pads - K) / stride + 1.
Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right);

}  // namespace ltx2::ops
