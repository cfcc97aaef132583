// CPU Snake-Beta, one channel row per task; the reference's operation order (x + (1 / (β + eps)) *
// sin(x α)²) is kept so results agree to float32 rounding.
#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
// Below this many elements a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 18;
}  // namespace

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta) {
  if (any_bf16({&x, &log_alpha, &log_beta}))
    return cpu::snake_beta(widen(x), widen(log_alpha), widen(log_beta)).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && x.dim() == 3, "snake_beta: f32 [B, C, L] expected, got {}", x.str());
  const int64_t B = x.size(0), C = x.size(1), L = x.size(2);
  LTX2_CHECK(log_alpha.dtype() == DType::F32 && log_alpha.numel() == C && log_beta.dtype() == DType::F32 &&
                 log_beta.numel() == C,
             "snake_beta: parameters {} and {} for {} channels", log_alpha.str(), log_beta.str(), C);
  Tensor xc = x.contiguous(), ac = log_alpha.contiguous(), bc = log_beta.contiguous();
  Tensor y = Tensor::empty(x.shape());
  const float* xp = xc.data<float>();
  const float* la = ac.data<float>();
  const float* lb = bc.data<float>();
  float* yp = y.data<float>();
  constexpr float kEps = 1e-9f;

#pragma omp parallel for schedule(static) if (B * C * L > kParallelWork)
  for (int64_t row = 0; row < B * C; ++row) {
    const int64_t c = row % C;
    const float alpha = std::exp(la[c]);
    const float inv_beta = 1.f / (std::exp(lb[c]) + kEps);
    const float* in = xp + row * L;
    float* out = yp + row * L;
    for (int64_t t = 0; t < L; ++t) {
      const float s = std::sin(in[t] * alpha);
      out[t] = in[t] + inv_beta * (s * s);
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
