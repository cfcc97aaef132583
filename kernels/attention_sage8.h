// The 8-bit attention of the CUDA backend (kernels/attention_sage8.cu): SageAttention2's
// quantization (K smoothed by its mean, Q per token and K per 128-key tile in INT8, P and V in
// FP8 e4m3 with V scaled per channel) on a FlashAttention-3-style kernel, for unmasked attention
// at head dim 128. It changes the result (ops::AttentionPrecision says when it runs); its error
// against float32 is measured in docs/performance.md.
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// Whether the kernel takes these operands: q [B, H, Tq, 128], k and v [B, Hkv, Tk, 128] (H a
// multiple of Hkv), bf16 with unit stride along the head dim, strides that are multiples of 8
// elements, 16-byte aligned data, Tq, Tk >= 1.
bool sage8_attention_takes(const Tensor& q, const Tensor& k, const Tensor& v);

// out = softmax(q kᵀ · scale) v in 8-bit arithmetic for operands sage8_attention_takes; out is bf16
// [B, H, Tq, 128], written through its strides. The quantized copies of q, k and v (about half their
// bytes) are made on the device first. Legacy default stream; no host synchronisation.
void sage8_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale);

}  // namespace ltx2::cuda
