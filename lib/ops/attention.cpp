// attention (ops/attention.h): the shape check every backend shares, then the CPU kernel, the
// fused CUDA kernel, or, on CUDA at head dims that kernel does not take, attention composed from
// the other ops.
#include "ops/attention.h"

#include <cmath>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

namespace {

// Attention from the other ops in float32 on the CUDA backend (materialises the [B, H, Tq, Tk]
// scores: for small models only; their golden GPU tests were calibrated on this path). Float masks
// only. Grouped KV heads are copied out to one per query head here (also small models only).
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, float scale,
                          int64_t kv_group) {
  LTX2_CHECK(q.device() == k.device() && q.device() == v.device(),
             "attention: q {} k {} v {} on different devices", q.str(), k.str(), v.str());
  LTX2_CHECK(!mask.defined() || mask.dtype() == DType::F32 || mask.dtype() == DType::BF16,
             "attention: head dim {} (q {}, v {}) takes only float masks on CUDA, got {}", q.size(3), q.str(),
             v.str(), mask.str());
  const float sc = scale > 0.f ? scale : 1.f / std::sqrt(static_cast<float>(q.size(3)));
  auto per_query_head = [kv_group](const Tensor& x) {
    const Tensor f = x.to(DType::F32);
    if (kv_group == 1) return f;
    const int64_t B = f.size(0), Hkv = f.size(1), T = f.size(2), D = f.size(3);
    return f.unsqueeze(2).expand({B, Hkv, kv_group, T, D}).reshape({B, Hkv * kv_group, T, D});
  };
  const Tensor kt = per_query_head(k).transpose(2, 3);
  Tensor scores = mul(matmul(q.to(DType::F32).contiguous(), kt), sc);
  if (mask.defined()) scores = add(scores, mask.to(DType::F32));
  const Tensor out = matmul(softmax(scores), per_query_head(v).contiguous());
  return out.to(q.dtype());
}

}  // namespace

int64_t attention_kv_group(const Tensor& q, const Tensor& k, const Tensor& v) {
  LTX2_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "attention: q, k, v must be 4-d, got {} {} {}",
             q.str(), k.str(), v.str());
  const int64_t H = q.size(1), Hkv = k.size(1);
  LTX2_CHECK(
      k.size(0) == q.size(0) && v.size(0) == q.size(0) && v.size(1) == Hkv && k.size(3) == q.size(3) &&
          v.size(2) == k.size(2) && (Hkv == H || (Hkv > 0 && H > 0 && H % Hkv == 0)),
      "attention: q {} k {} v {} do not match (q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv], "
      "H a multiple of Hkv)",
      q.str(), k.str(), v.str());
  return Hkv == H ? 1 : H / Hkv;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, float scale) {
  const int64_t kv_group = attention_kv_group(q, k, v);
  if (q.device().is_cuda() && !attention_kernel_takes(q.size(3), v.size(3))) {
    // Profiled as one attention, as the fused kernel is (the ops inside count for it).
    OpScope op_scope("attention");
    return composed_attention(q, k, v, mask, scale, kv_group);
  }
  LTX2_DISPATCH_CUDA(q.device(), attention, q, k, v, mask, scale);
  return cpu::attention(q, k, v, mask, scale);
}

}  // namespace ltx2::ops
