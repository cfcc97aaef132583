// CPU decoded video -> 8-bit RGB frames (ops/rgb8.h): one (frame, row) per task, the three
// channel planes read side by side and interleaved into the row.
#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

Tensor decoded_to_rgb8(const Tensor& video) {
  if (any_bf16({&video})) return cpu::decoded_to_rgb8(widen(video));
  LTX2_CHECK(video.dtype() == DType::F32 && video.dim() == 4 && video.size(0) == 3,
             "decoded_to_rgb8: f32 or bf16 [3, F, H, W] expected, got {}", video.str());
  const int64_t F = video.size(1), H = video.size(2), W = video.size(3);
  const Tensor x = video.contiguous();
  Tensor out = Tensor::empty({F, H, W, 3}, DType::U8);
  const float* src = x.data<float>();
  uint8_t* dst = out.data<uint8_t>();
  const int64_t plane = F * H * W;
#pragma omp parallel for schedule(static) if (plane > (int64_t{1} << 16))
  for (int64_t row = 0; row < F * H; ++row) {
    const float* r = src + row * W;
    const float* g = r + plane;
    const float* b = g + plane;
    uint8_t* o = dst + row * W * 3;
    for (int64_t i = 0; i < W; ++i) {
      o[3 * i] = unit_to_u8(from_vae_range(r[i]));
      o[3 * i + 1] = unit_to_u8(from_vae_range(g[i]));
      o[3 * i + 2] = unit_to_u8(from_vae_range(b[i]));
    }
  }
  return out;
}

}  // namespace ltx2::ops::cpu
