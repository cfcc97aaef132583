// CPU nearest-neighbour 2-D upsampling, one (batch, channel) plane per task.
#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
// Below this many elements a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 18;
}  // namespace

Tensor upsample_nearest2d(const Tensor& x, int64_t factor) {
  if (any_bf16({&x})) return cpu::upsample_nearest2d(widen(x), factor).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && x.dim() == 4, "upsample_nearest2d: f32 [B, C, H, W] expected, got {}",
             x.str());
  LTX2_CHECK(factor >= 1, "upsample_nearest2d: factor {} must be at least 1", factor);
  const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Ho = H * factor, Wo = W * factor;
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty({x.size(0), x.size(1), Ho, Wo});
  const float* xp = xc.data<float>();
  float* yp = y.data<float>();
#pragma omp parallel for schedule(static) if (planes * Ho * Wo > kParallelWork)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t h = 0; h < Ho; ++h) {
      const float* src = xp + (p * H + h / factor) * W;
      float* dst = yp + (p * Ho + h) * Wo;
      for (int64_t w = 0; w < Wo; ++w) dst[w] = src[w / factor];
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
