// The activation quantization of the FP8 linears (ops/linear.h linear_fp8), one rule for the CPU
// and the CUDA kernels so that both give the same codes: x · (1 / scale) in float32, clamped to the
// e4m3 range (NaN stays NaN, as torch.clamp keeps it), rounded to nearest even. The scale is the
// static input scale (fp8-scaled-mm) or a row's own (fp8: row_scale_f8e4m3 of the row's largest
// magnitude, computed on the fly).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ltx2::ops {

constexpr float kF8E4M3Max = 448.f;

LTX2_HOST_DEVICE inline uint8_t quantize_f8e4m3(float x, float inverse_scale) {
  float v = x * inverse_scale;
  v = v > kF8E4M3Max ? kF8E4M3Max : (v < -kF8E4M3Max ? -kF8E4M3Max : v);
  return f32_to_f8e4m3(v);
}

// The scale of a row whose largest magnitude is `amax` (NaNs skipped, as fmax skips them): that
// magnitude maps to e4m3's largest, 448. A row of zeros takes 1 (any scale gives it zero codes); an
// infinite amax gives an infinite scale, so the row's products come out NaN, not finite and wrong.
LTX2_HOST_DEVICE inline float row_scale_f8e4m3(float amax) {
  return amax > 0.f ? amax * (1.f / kF8E4M3Max) : 1.f;
}

}  // namespace ltx2::ops
