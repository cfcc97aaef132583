// The activation quantization of the FP8 linear (ops/linear.h linear_fp8), one rule for the CPU
// and the CUDA kernel so that both give the same codes: x · (1 / input_scale) in float32, clamped
// to the e4m3 range (NaN stays NaN, as torch.clamp keeps it), rounded to nearest even.
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

}  // namespace ltx2::ops
