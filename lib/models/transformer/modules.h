// The transformer's building blocks as functions of weights and tensors (lib/ops only): linear,
// AdaLN-single, modulation, the feed-forward and the attention module.
#pragma once

#include <optional>

#include "core/tensor.h"
#include "models/transformer/attention_strategy.h"
#include "models/transformer/weights.h"
#include "ops/adaln.h"
#include "ops/rope.h"

namespace ltx2::models::transformer {

// An activation as the linears that read it take it: the tensor, or its rows quantized for the
// per-row FP8 linears (--quantization fp8), or both. The rows are made once, by the kernel that
// normalizes the activation (normalized_input) or on the first such linear that reads it, and shared
// by the others (q, k and v read one input).
class LinearInput {
 public:
  // Implicit: a plain tensor is an input as it stands.
  LinearInput(Tensor x) : x_(std::move(x)) {}  // NOLINT(google-explicit-constructor)
  explicit LinearInput(ops::Fp8Rows rows) : rows_(std::move(rows)) {}
  const Tensor& tensor() const;      // refused when only the rows were made
  const ops::Fp8Rows& rows() const;  // quantized from the tensor on first use

 private:
  Tensor x_;
  mutable std::optional<ops::Fp8Rows> rows_;
};

// Whether w is a per-row FP8 linear (reads an input's rows, not its tensor).
bool reads_rows(const LinearWeights& w);

Tensor apply_linear(const LinearInput& x, const LinearWeights& w);
// gelu_tanh(apply_linear(x, w)) as one op (on the GPU: the GEMM's epilogue).
Tensor apply_linear_gelu_tanh(const LinearInput& x, const LinearWeights& w);

// rms_norm_modulate(x, shift, scale) for linears that read it: only its quantized rows, made in the
// norm's kernel, when `rows_only` (every reader is a per-row FP8 linear), else the tensor.
LinearInput normalized_input(const Tensor& x, const ops::AdaRow& shift, const ops::AdaRow& scale, float eps,
                             bool rows_only);

// [cos | sin] sinusoid of t [N] with 256 channels, exponent -ln(10000) * j / 128.
Tensor timestep_sinusoid(const Tensor& t);

struct AdaLnOutput {
  Tensor modulation;  // [N, rows * D]
  Tensor embedding;   // [N, D]
};
// AdaLayerNormSingle on already-scaled timesteps t [N]; `sinusoid` receives the sinusoid if given.
AdaLnOutput adaln_single(const AdaLnWeights& w, const Tensor& t, Tensor* sinusoid = nullptr);

// table[row] + modulation[:, :, row, :], viewing modulation [B, T', rows * D] as [B, T', rows, D]
// (read in place by the fused ops; ops::ada_value materialises it); with `index` defined, modulation
// is [1, U, rows * D], the rows of the distinct timesteps (StreamState::ada_index).
ops::AdaRow ada_row(const Tensor& table, const Tensor& modulation, const Tensor& index, int64_t rows,
                    int64_t row);
// x * (1 + scale) + shift
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);

Tensor feed_forward(const FeedForwardWeights& w, const LinearInput& x);

// What a perturbation does to one self-attention: nothing, replace every sample's output by v,
// or blend per sample (keep [B, 1, 1]: 1 = attention, 0 = v).
struct SelfAttentionPerturbation {
  bool all = false;
  Tensor keep;
};

struct AttentionCall {
  AttentionSite site;
  int64_t heads = 1;
  float eps = 1e-6f;
  const ops::RopeTables* q_rope = nullptr;  // no RoPE when null
  const ops::RopeTables* k_rope = nullptr;
  Tensor mask;  // additive, broadcastable to [B, H, Tq, Tk]
  SelfAttentionPerturbation perturbation;
};

// to_out(gate(attention(q_norm(to_q x), k_norm(to_k ctx), to_v ctx))) through the strategy; x and
// context may be one input (self-attention).
Tensor attention_module(const AttentionWeights& w, const LinearInput& x, const LinearInput& context,
                        const AttentionCall& call, const AttentionStrategy& strategy);
// Whether the attention reads its query input only through per-row FP8 linears (no gate logits).
bool query_reads_rows_only(const AttentionWeights& w);
// Whether it reads its key/value input only through per-row FP8 linears.
bool context_reads_rows_only(const AttentionWeights& w);

}  // namespace ltx2::models::transformer
