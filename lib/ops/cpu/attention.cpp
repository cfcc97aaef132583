// CPU scaled dot-product attention: one query row at a time (scores, masked softmax, weighted sum
// of values), rows spread over threads. Float32 throughout, like the reference's SDPA MATH path.
// Grouped-query attention reads query head h's keys and values from head h / (H / Hkv) in place.
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, float scale) {
  if (any_bf16({&q, &k, &v, &mask}))
    return cpu::attention(widen(q), widen(k), widen(v), widen(mask), scale).to(q.dtype());
  const int64_t group = q.size(1) / k.size(1);  // query heads per key/value head
  LTX2_CHECK(q.dtype() == DType::F32 && k.dtype() == DType::F32 && v.dtype() == DType::F32,
             "attention: CPU path takes f32");
  int64_t B = q.size(0), H = q.size(1), Tq = q.size(2), D = q.size(3);
  int64_t Hkv = k.size(1), Tk = k.size(2), Dv = v.size(3);
  float sc = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(D));
  Tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  Tensor m;
  bool bool_mask = false;
  if (mask.defined()) {
    bool_mask = mask.dtype() == DType::Bool || mask.dtype() == DType::U8;
    LTX2_CHECK(bool_mask || mask.dtype() == DType::F32, "attention: mask must be bool or f32, got {}",
               mask.str());
    m = mask.expand({B, H, Tq, Tk});
  }
  Tensor out = Tensor::empty({B, H, Tq, Dv});
  const float* qp = qc.data<float>();
  const float* kp = kc.data<float>();
  const float* vp = vc.data<float>();
  float* op = out.data<float>();
  const float neg_inf = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    std::vector<float> scores(Tk);
#pragma omp for collapse(3) schedule(static)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < Tq; ++i) {
          const float* qrow = qp + ((b * H + h) * Tq + i) * D;
          const float* kbase = kp + (b * Hkv + h / group) * Tk * D;
          const float* vbase = vp + (b * Hkv + h / group) * Tk * Dv;
          // The scores loop is the same with and without a mask, and the mask is applied in a pass
          // of its own: folding it into this loop let the compiler vectorize the unmasked loop
          // differently, so an all-zero additive mask changed the result in the last bits.
          for (int64_t j = 0; j < Tk; ++j) {
            float s = 0.f;
            const float* krow = kbase + j * D;
#pragma omp simd reduction(+ : s)
            for (int64_t d = 0; d < D; ++d) s += qrow[d] * krow[d];
            scores[j] = s * sc;
          }
          if (m.defined()) {
            const int64_t row = m.offset() + b * m.stride(0) + h * m.stride(1) + i * m.stride(2);
            for (int64_t j = 0; j < Tk; ++j) {
              const int64_t off = row + j * m.stride(3);
              if (bool_mask) {
                if (!static_cast<const uint8_t*>(m.storage()->data())[off]) scores[j] = neg_inf;
              } else {
                scores[j] += static_cast<const float*>(m.storage()->data())[off];
              }
            }
          }
          float mx = neg_inf;
          for (int64_t j = 0; j < Tk; ++j) mx = std::max(mx, scores[j]);
          float* orow = op + ((b * H + h) * Tq + i) * Dv;
          for (int64_t d = 0; d < Dv; ++d) orow[d] = 0.f;
          if (mx == neg_inf) continue;  // every key excluded
          float denom = 0.f;
          for (int64_t j = 0; j < Tk; ++j) {
            scores[j] = std::exp(scores[j] - mx);
            denom += scores[j];
          }
          float inv = 1.f / denom;
          for (int64_t j = 0; j < Tk; ++j) {
            float p = scores[j] * inv;
            if (p == 0.f) continue;
            const float* vrow = vbase + j * Dv;
#pragma omp simd
            for (int64_t d = 0; d < Dv; ++d) orow[d] += p * vrow[d];
          }
        }
      }
    }
  }
  return out;
}

}  // namespace ltx2::ops::cpu
