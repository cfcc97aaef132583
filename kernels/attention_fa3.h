// The third attention engine of the CUDA backend: a kernel in FlashAttention-3's structure
// (kernels/attention_fa3.cu) for unmasked bf16 attention at head dim 128, the transformer's video
// self- and cross-attention. Which engine runs a call is kernels/attention_pick.h's decision.
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// Whether the kernel takes these operands: q [B, H, Tq, 128], k and v [B, Hkv, Tk, 128] (H a
// multiple of Hkv), all bf16 with unit stride along the head dim, positive strides that are
// multiples of 8 elements and 16-byte aligned data (what its bulk tensor copies need), Tq, Tk >= 1.
bool fa3_attention_takes(const Tensor& q, const Tensor& k, const Tensor& v);

// out = softmax(q kᵀ · scale) v for operands fa3_attention_takes; out is bf16 [B, H, Tq, 128],
// written through its strides. Launches on the legacy default stream; no host synchronisation.
void fa3_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale);

}  // namespace ltx2::cuda
