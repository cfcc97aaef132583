// CPU RMSNorm and LayerNorm over the last dimension, float32 statistics.
#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
void check_affine(const Tensor& x, const Tensor& p, const char* what) {
  if (p.defined())
    LTX2_CHECK(p.dtype() == DType::F32 && p.numel() == x.size(-1), "{}: parameter {} for input {}",
               what, p.str(), x.str());
}
}  // namespace

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  if (any_bf16({&x, &w})) return cpu::rms_norm(widen(x), widen(w), eps).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32, "rms_norm: f32 expected, got {}", x.str());
  check_affine(x, w, "rms_norm");
  Tensor xc = x.contiguous(), wc = w.defined() ? w.contiguous() : Tensor();
  Tensor out = Tensor::empty(x.shape());
  int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  const float* in = xc.data<float>();
  const float* wp = wc.defined() ? wc.data<float>() : nullptr;
  float* o = out.data<float>();
#pragma omp parallel for schedule(static) if (rows * C > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * C;
    float ss = 0.f;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < C; ++i) ss += row[i] * row[i];
    float inv = 1.f / std::sqrt(ss / static_cast<float>(C) + eps);
    for (int64_t i = 0; i < C; ++i) o[r * C + i] = row[i] * inv * (wp ? wp[i] : 1.f);
  }
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
  if (any_bf16({&x, &w, &b})) return cpu::layer_norm(widen(x), widen(w), widen(b), eps).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32, "layer_norm: f32 expected, got {}", x.str());
  check_affine(x, w, "layer_norm");
  check_affine(x, b, "layer_norm");
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Tensor out = Tensor::empty(x.shape());
  int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  const float* in = xc.data<float>();
  const float* wp = wc.defined() ? wc.data<float>() : nullptr;
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* o = out.data<float>();
#pragma omp parallel for schedule(static) if (rows * C > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * C;
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < C; ++i) s += row[i];
    float mean = s / static_cast<float>(C);
    float v = 0.f;
#pragma omp simd reduction(+ : v)
    for (int64_t i = 0; i < C; ++i) v += (row[i] - mean) * (row[i] - mean);
    float inv = 1.f / std::sqrt(v / static_cast<float>(C) + eps);
    for (int64_t i = 0; i < C; ++i)
      o[r * C + i] = (row[i] - mean) * inv * (wp ? wp[i] : 1.f) + (bp ? bp[i] : 0.f);
  }
  return out;
}

}  // namespace ltx2::ops::cpu
