// The transformer's building blocks as functions of weights and tensors (lib/ops only): linear,
// AdaLN-single, modulation, the feed-forward and the attention module.
#pragma once

#include "core/tensor.h"
#include "models/transformer/attention_strategy.h"
#include "models/transformer/weights.h"
#include "ops/adaln.h"
#include "ops/rope.h"

namespace ltx2::models::transformer {

Tensor apply_linear(const Tensor& x, const LinearWeights& w);
// gelu_tanh(apply_linear(x, w)) as one op (on the GPU: the GEMM's epilogue).
Tensor apply_linear_gelu_tanh(const Tensor& x, const LinearWeights& w);

// [cos | sin] sinusoid of t [N] with 256 channels, exponent -ln(10000) * j / 128.
Tensor timestep_sinusoid(const Tensor& t);

struct AdaLnOutput {
  Tensor modulation;  // [N, rows * D]
  Tensor embedding;   // [N, D]
};
// AdaLayerNormSingle on already-scaled timesteps t [N]; `sinusoid` receives the sinusoid if given.
AdaLnOutput adaln_single(const AdaLnWeights& w, const Tensor& t, Tensor* sinusoid = nullptr);

// table[row] + modulation[:, :, row, :], viewing modulation [B, T', rows * D] as [B, T', rows, D]
// (read in place by the fused ops; ops::ada_value materialises it).
ops::AdaRow ada_row(const Tensor& table, const Tensor& modulation, int64_t rows, int64_t row);
// x * (1 + scale) + shift
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);

Tensor feed_forward(const FeedForwardWeights& w, const Tensor& x);

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

// to_out(gate(attention(q_norm(to_q x), k_norm(to_k ctx), to_v ctx))) through the strategy.
Tensor attention_module(const AttentionWeights& w, const Tensor& x, const Tensor& context,
                        const AttentionCall& call, const AttentionStrategy& strategy);

}  // namespace ltx2::models::transformer
