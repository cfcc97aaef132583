// CPU PixelNorm and GroupNorm over dim 1 of [B, C, ...] tensors (float32 statistics; GroupNorm
// accumulates its sums in double because a group spans C/groups * positions values).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
int64_t positions_of(const Tensor& x) {
  int64_t n = 1;
  for (int d = 2; d < x.dim(); ++d) n *= x.size(d);
  return n;
}
}  // namespace

Tensor pixel_norm(const Tensor& x, float eps) {
  if (any_bf16({&x})) return cpu::pixel_norm(widen(x), eps).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && x.dim() >= 2, "pixel_norm: f32 [B, C, ...] expected, got {}",
             x.str());
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty(x.shape());
  const int64_t B = x.size(0), C = x.size(1), N = positions_of(x);
  const float* in = xc.data<float>();
  float* out = y.data<float>();
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) schedule(static) if (B * C * N > 65536)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t p0 = blk * kBlock, n = std::min(kBlock, N - p0);
      float ss[kBlock] = {};
      const float* base = in + b * C * N + p0;
      for (int64_t c = 0; c < C; ++c) {
        const float* row = base + c * N;
#pragma omp simd
        for (int64_t p = 0; p < n; ++p) ss[p] += row[p] * row[p];
      }
      for (int64_t p = 0; p < n; ++p) ss[p] = 1.f / std::sqrt(ss[p] / static_cast<float>(C) + eps);
      float* obase = out + b * C * N + p0;
      for (int64_t c = 0; c < C; ++c) {
        const float* row = base + c * N;
        float* orow = obase + c * N;
#pragma omp simd
        for (int64_t p = 0; p < n; ++p) orow[p] = row[p] * ss[p];
      }
    }
  }
  return y;
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps) {
  if (any_bf16({&x, &w, &b})) return cpu::group_norm(widen(x), groups, widen(w), widen(b), eps).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && x.dim() >= 2, "group_norm: f32 [B, C, ...] expected, got {}",
             x.str());
  const int64_t B = x.size(0), C = x.size(1), N = positions_of(x);
  LTX2_CHECK(groups > 0 && C % groups == 0, "group_norm: {} channels in {} groups", C, groups);
  for (const Tensor* p : {&w, &b})
    if (p->defined())
      LTX2_CHECK(p->dtype() == DType::F32 && p->numel() == C, "group_norm: parameter {} for {}", p->str(),
                 x.str());
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Tensor y = Tensor::empty(x.shape());
  const int64_t per_group = C / groups, span = per_group * N;
  const float* in = xc.data<float>();
  const float* wp = wc.defined() ? wc.data<float>() : nullptr;
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* out = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static) if (B * C * N > 65536)
  for (int64_t bi = 0; bi < B; ++bi) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* src = in + (bi * C + g * per_group) * N;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < span; ++i) {
        sum += src[i];
        sq += double(src[i]) * src[i];
      }
      const double mean = sum / double(span);
      const double var = std::max(0.0, sq / double(span) - mean * mean);
      const float m = static_cast<float>(mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
      for (int64_t c = 0; c < per_group; ++c) {
        const int64_t ch = g * per_group + c;
        const float scale = inv * (wp ? wp[ch] : 1.f), shift = bp ? bp[ch] : 0.f;
        const float* row = src + c * N;
        float* orow = out + (bi * C + ch) * N;
#pragma omp simd
        for (int64_t p = 0; p < N; ++p) orow[p] = (row[p] - m) * scale + shift;
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
