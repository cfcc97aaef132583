// Embeddings1DConnector (see embeddings_connector.h).
#include "models/text/embeddings_connector.h"

#include <cmath>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/rope.h"

namespace ltx2 {

namespace {
constexpr float kEps = 1e-6f;
}

EmbeddingsConnector::EmbeddingsConnector(const ConnectorConfig& config, const WeightView& w, DType dtype,
                                         Device device)
    : config_(config) {
  const int64_t inner = config.inner_dim(), ff = 4 * inner;
  auto load = [&](const WeightView& v, const std::string& key, const Shape& shape) {
    return v.load(key, shape, dtype, device);
  };
  registers_ = load(w, "learnable_registers", {config.registers, inner});
  for (int64_t i = 0; i < config.layers; ++i) {
    WeightView b = w.sub("transformer_1d_blocks." + std::to_string(i) + ".");
    Block blk;
    blk.to_q_w = load(b, "attn1.to_q.weight", {inner, inner});
    blk.to_q_b = load(b, "attn1.to_q.bias", {inner});
    blk.to_k_w = load(b, "attn1.to_k.weight", {inner, inner});
    blk.to_k_b = load(b, "attn1.to_k.bias", {inner});
    blk.to_v_w = load(b, "attn1.to_v.weight", {inner, inner});
    blk.to_v_b = load(b, "attn1.to_v.bias", {inner});
    blk.out_w = load(b, "attn1.to_out.0.weight", {inner, inner});
    blk.out_b = load(b, "attn1.to_out.0.bias", {inner});
    blk.q_norm = load(b, "attn1.q_norm.weight", {inner});
    blk.k_norm = load(b, "attn1.k_norm.weight", {inner});
    if (config.gated_attention) {
      blk.gate_w = load(b, "attn1.to_gate_logits.weight", {config.heads, inner});
      blk.gate_b = load(b, "attn1.to_gate_logits.bias", {config.heads});
    }
    blk.ff_in_w = load(b, "ff.net.0.proj.weight", {ff, inner});
    blk.ff_out_w = load(b, "ff.net.2.weight", {inner, ff});
    if (config.ff_bias) {
      blk.ff_in_b = load(b, "ff.net.0.proj.bias", {ff});
      blk.ff_out_b = load(b, "ff.net.2.bias", {inner});
    }
    blocks_.push_back(std::move(blk));
  }
}

Tensor EmbeddingsConnector::attention(const Block& blk, const Tensor& x, const ops::RopeTables& rope) const {
  const int64_t B = x.size(0), T = x.size(1), H = config_.heads, hd = config_.head_dim;
  auto heads = [&](const Tensor& t) { return t.view({B, T, H, hd}).permute({0, 2, 1, 3}); };
  Tensor q = ops::rms_norm_rope(ops::linear(x, blk.to_q_w, blk.to_q_b), blk.q_norm, kEps, rope);
  Tensor k = ops::rms_norm_rope(ops::linear(x, blk.to_k_w, blk.to_k_b), blk.k_norm, kEps, rope);
  Tensor v = ops::linear(x, blk.to_v_w, blk.to_v_b);
  float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor o =
      ops::attention(heads(q), heads(k), heads(v), Tensor(), scale).permute({0, 2, 1, 3});  // [B, T, H, hd]
  if (config_.gated_attention) {
    Tensor gate = ops::mul(ops::sigmoid(ops::linear(x, blk.gate_w, blk.gate_b)), 2.f);  // [B, T, H]
    o = ops::mul(o, gate.unsqueeze(-1));
  }
  return ops::linear(o.reshape({B, T, H * hd}), blk.out_w, blk.out_b);
}

Tensor EmbeddingsConnector::forward(const Tensor& x, const Tensor& mask) const {
  const int64_t inner = config_.inner_dim(), R = config_.registers;
  LTX2_CHECK(x.dim() == 3 && x.size(2) == inner, "connector: input {} does not have width {}", x.str(),
             inner);
  const int64_t B = x.size(0), T = x.size(1);
  LTX2_CHECK(mask.shape() == Shape({B, T}), "connector: mask {} does not match input {}", mask.str(),
             x.str());
  LTX2_CHECK(T % R == 0, "connector: sequence length {} must be a multiple of the {} learnable registers", T,
             R);

  // Each run of pad rows t..t+n-1 within one register period takes registers t % R .. by one copy.
  Tensor h = x.contiguous().clone();
  std::vector<int64_t> m = mask.to(Device::cpu()).contiguous().to_vector_i64();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T;) {
      if (m[b * T + t]) {
        ++t;
        continue;
      }
      int64_t n = 1;
      while (t + n < T && !m[b * T + t + n] && (t + n) % R != 0) ++n;
      h.select(0, b).narrow(0, t, n).copy_(registers_.narrow(0, t % R, n));
      t += n;
    }
  }

  ops::RopeSpec spec;
  spec.dim = inner;
  spec.heads = config_.heads;
  spec.theta = config_.theta;
  spec.max_pos = {config_.max_pos};
  spec.grid =
      config_.double_precision_rope ? ops::RopeGridPrecision::Float64 : ops::RopeGridPrecision::Float32;
  // Formed on the host (positions 0..T-1 are known there), then moved.
  ops::RopeTables rope = ops::rope_tables(Tensor::arange(T).view({1, 1, T}), spec);
  rope.cos = rope.cos.to(h.device());
  rope.sin = rope.sin.to(h.device());
  for (const Block& blk : blocks_) {
    h = ops::add(h, attention(blk, ops::rms_norm(h, Tensor(), kEps), rope));
    Tensor n = ops::rms_norm(h, Tensor(), kEps);
    Tensor f =
        ops::linear(ops::gelu_tanh(ops::linear(n, blk.ff_in_w, blk.ff_in_b)), blk.ff_out_w, blk.ff_out_b);
    h = ops::add(h, f);
  }
  return ops::rms_norm(h, Tensor(), kEps);
}

}  // namespace ltx2
