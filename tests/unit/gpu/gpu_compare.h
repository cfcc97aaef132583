// Helpers of the GPU op tests: moving tensors to the GPU as bf16 or f32, and the FlashAttention-
// style acceptance rule: the GPU bf16 result's error against the CPU float32 result may be at most
// twice the error of the same computation done naively in bf16 (inputs and intermediates rounded
// to bf16 on the CPU), plus a small absolute tolerance. NaN never passes.
#pragma once

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/tensor.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/reduce.h"
#include "support/catch.h"

namespace ltx2::test {

inline Device gpu() {
  return Device::cuda(0);
}
inline Tensor to_gpu(const Tensor& t, DType dtype) {
  return t.to(gpu()).to(dtype);
}
inline Tensor to_host_f32(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::F32);
}
// Rounds every element to bf16 (CPU f32 in and out).
inline Tensor round_bf16(const Tensor& t) {
  return t.to(DType::BF16).to(DType::F32);
}

// Largest |a - b|; infinity when either holds a NaN or the shapes differ.
inline double max_error(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  auto va = to_host_f32(a).to_vector(), vb = to_host_f32(b).to_vector();
  double m = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    double d = std::fabs(double(va[i]) - double(vb[i]));
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

// The bf16 acceptance rule above; `gpu_out` may be on the GPU.
inline void require_bf16_close(const std::string& what, const Tensor& gpu_out, const Tensor& naive,
                               const Tensor& ref, double atol = 1e-4) {
  double gpu_err = max_error(gpu_out, ref), naive_err = max_error(naive, ref);
  INFO(what << ": GPU error " << gpu_err << ", naive bf16 error " << naive_err);
  REQUIRE(std::isfinite(naive_err));
  REQUIRE(gpu_err <= 2 * naive_err + atol);
}

// The golden README's rule for a model's bf16 GPU output against the fixture's float32 `ref`: error
// at most `factor` x the naive bf16 computation's plus `atol`. CHECK (not REQUIRE), so that every
// output of a case reports its errors; each comparison is also printed, for the record.
inline void check_bf16_rule(const std::string& what, const Tensor& gpu_out, const Tensor& naive,
                            const Tensor& ref, double factor = 2.0, double atol = 1e-3) {
  const double gpu_err = max_error(gpu_out, ref), naive_err = max_error(naive, ref);
  std::printf("bf16 rule %s: GPU error %.4g, naive bf16 error %.4g, ratio %.3f (bound %.2fx + %.0e)\n",
              what.c_str(), gpu_err, naive_err, gpu_err / naive_err, factor, atol);
  INFO(what << ": GPU error " << gpu_err << ", naive bf16 error " << naive_err << ", ratio "
            << gpu_err / naive_err);
  REQUIRE(std::isfinite(naive_err));
  CHECK(gpu_err <= factor * naive_err + atol);
}

// [B, Hkv, T, D] -> [B, H, T, D], every KV head repeated for the query heads it serves (for the
// naive computation, whose matmuls take one K/V head per query head).
inline Tensor repeat_kv_heads(const Tensor& x, int64_t H) {
  const int64_t B = x.size(0), Hkv = x.size(1), T = x.size(2), D = x.size(3);
  if (H == Hkv) return x;
  return x.unsqueeze(2).expand({B, Hkv, H / Hkv, T, D}).reshape({B, H, T, D});
}

// softmax(round(round(q kᵀ) * scale) + mask) v with bf16 rounding after every step: the naive
// bf16 attention the attention kernels are judged against (add_mask may be undefined).
inline Tensor naive_bf16_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& add_mask,
                                   float scale) {
  Tensor s = round_bf16(ops::matmul(round_bf16(q), round_bf16(k).transpose(-1, -2)));
  s = round_bf16(ops::mul(s, scale));
  if (add_mask.defined()) s = ops::add(s, add_mask);
  Tensor p = round_bf16(ops::softmax(s));
  return round_bf16(ops::matmul(p, round_bf16(v)));
}

// f32 on the GPU against f32 on the CPU.
inline void require_f32_close(const std::string& what, const Tensor& gpu_out, const Tensor& ref,
                              double atol) {
  double err = max_error(gpu_out, ref);
  INFO(what << ": GPU f32 error " << err);
  REQUIRE(err <= atol);
}

// A key mask [B, 1, 1, Tk] that keeps key j of batch b when (j + b) % 3 != 0, and its additive
// form (0 where kept, -inf where not): the attention tests' masks.
inline Tensor key_mask_bool(int64_t B, int64_t Tk) {
  Tensor m = Tensor::empty({B, 1, 1, Tk}, DType::Bool);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < Tk; ++j) m.data<uint8_t>()[b * Tk + j] = (j + b) % 3 != 0;
  return m;
}
inline Tensor additive(const Tensor& bool_mask) {
  Tensor m = Tensor::empty(bool_mask.shape());
  for (int64_t i = 0; i < m.numel(); ++i)
    m.data<float>()[i] = bool_mask.data<uint8_t>()[i] ? 0.f : -std::numeric_limits<float>::infinity();
  return m;
}

}  // namespace ltx2::test
