// Scaled dot-product attention, the one op every model attends through (a sequence-parallel
// strategy later wraps it rather than the models).
#pragma once

#include <string>

#include "core/tensor.h"

namespace ltx2::ops {

// q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] -> [B, H, Tq, Dv], where H is a multiple
// of Hkv and query head h attends with key/value head h / (H / Hkv) (grouped-query attention, as
// Hugging Face's repeat_kv, without the copy; Hkv == H is plain multi-head attention).
// mask: undefined, or broadcastable to [B, H, Tq, Tk]: bool/u8 (true = attend) or float (added
// to the scores; -inf excludes). scale <= 0 means 1/sqrt(D). A query row whose keys are all
// excluded yields zeros (the reference's SDPA would give NaN; the pipelines never produce one).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                 float scale = 0.f);

// The shape contract above, checked for every backend (the error names q, k and v); returns the
// number of query heads per key/value head, H / Hkv.
int64_t attention_kv_group(const Tensor& q, const Tensor& k, const Tensor& v);

// Whether the CUDA backend's fused kernel (kernels/attention.cu) takes q/k head dim `d` and v head
// dim `dv`: multiples of 8 (whole 16-byte copies) from 64 to 256, dv == d. On CUDA the op composes
// the others (matmul, softmax) at the rest: the tiny test models' head dims 4-16 would leave at
// least three quarters of a 64-wide tile as padding.
constexpr bool attention_kernel_takes(int64_t d, int64_t dv) {
  return d >= 64 && d <= 256 && d % 8 == 0 && dv == d;
}

// The CUDA backend: bf16 (f32 inputs rounded to bf16) at head dims that are multiples of 8 from 64
// to 256 with Dv == D runs a fused flash-attention kernel on wgmma (kernels/attention.cu); other
// head dims take a composed float32 path (float masks only) that materialises the scores. Unmasked
// calls have more engines: a kernel in FlashAttention-3's structure at head dim 128
// (kernels/attention_fa3.cu: a TMA producer and two ping-pong wgmma consumers), and in builds with
// cuDNN, for multi-head attention (Hkv == H) at head dims 64 and 128, cuDNN's fused flash
// attention. Auto times every engine that can take a new shape once (device events) and keeps the
// fastest; Wgmma, Fa3 and Cudnn force one (falling back to wgmma where it cannot run: masks, other
// head dims, grouped KV heads for cuDNN, unsupported layouts, builds without cuDNN). The mode
// starts from the environment variable LTX2_ATTENTION (auto|wgmma|fa3|cudnn; default auto).
enum class AttentionEngine { Auto, Wgmma, Fa3, Cudnn };

AttentionEngine attention_engine();
void set_attention_engine(AttentionEngine engine);
// "auto", "wgmma", "fa3" or "cudnn"; anything else throws naming `what` (e.g. the variable it came from).
AttentionEngine parse_attention_engine(const std::string& name, const std::string& what);
const char* attention_engine_name(AttentionEngine engine);
// Whether this build has the cuDNN engine.
bool cudnn_attention_built();

// The arithmetic of unmasked attention at head dim 128 on the CUDA backend (the transformer's
// video self- and cross-attention): Bf16 (the default: bf16 operands, float32 accumulation and
// softmax, whichever engine runs) or EightBit, SageAttention2's quantization (K smoothed, INT8
// Q·Kᵀ with Q per token and K per 128 keys, FP8 P·V with V per channel; kernels/attention_sage8.h),
// which changes the result (its error: docs/performance.md). Other calls, and the CPU backend,
// stay as they are. Starts from LTX2_ATTENTION_PRECISION (bf16|8bit; default bf16).
enum class AttentionPrecision { Bf16, EightBit };

AttentionPrecision attention_precision();
void set_attention_precision(AttentionPrecision precision);
// "bf16" or "8bit"; anything else throws naming `what`.
AttentionPrecision parse_attention_precision(const std::string& name, const std::string& what);
const char* attention_precision_name(AttentionPrecision precision);

}  // namespace ltx2::ops
