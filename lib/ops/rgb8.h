// The video decoder's output as 8-bit RGB frames, the way the reference writes them: its
// decode_video maps [-1, 1] to [0, 1] ((x + 1) * 0.5, clamped to [0, 1]) and its RGB24 frame
// converter scales by 255 and truncates (clamp, * 255, .to(torch.uint8)). The scalar rule is
// written once here (constexpr, so the CUDA kernel runs the same arithmetic: float32, one add,
// two multiplies, no fused multiply-add), and used by the CPU op, the CUDA kernel
// (kernels/rgb8.cu) and the fleet driver's blend of decoded tiles (parallel/vae_tile_plan.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

// [-1, 1] -> [0, 1], clamped; NaN stays NaN (as torch.clamp leaves it).
constexpr float from_vae_range(float x) {
  const float v = (x + 1.0f) * 0.5f;
  return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

// [0, 1] -> 0..255, truncating; below 0 and NaN give 0, 1 and above give 255 (every v below 1
// scales below 255). Written as selects on the product, so that host loops over rows vectorise.
constexpr uint8_t unit_to_u8(float v) {
  const float x = v * 255.0f;
  return static_cast<uint8_t>(x > 0.0f ? (x < 255.0f ? x : 255.0f) : 0.0f);
}

// One decoded sample [3, F, H, W] (f32 or bf16, values in [-1, 1]; the decoder's [B, 3, F, H, W]
// output at one batch index) -> frames [F, H, W, 3] uint8 on the same device:
// unit_to_u8(from_vae_range(x)) per value, computed in float32.
Tensor decoded_to_rgb8(const Tensor& video);

}  // namespace ltx2::ops
