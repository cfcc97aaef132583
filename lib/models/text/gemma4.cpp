// Gemma 4 text decoder (see gemma4.h). Float32 math on the reference's rounding points, as in
// gemma3.cpp: the RoPE inverse frequencies and angles in float32 as HF forms them, norms in
// float32. Everything that depends only on the tokens (embedding rows, RoPE tables, masks) is formed
// on the host once per forward and moved to the model's device before the layers run.
#include "models/text/gemma4.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/text/gemma3.h"
#include "models/text/gemma_layers.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace ltx2 {

Gemma4TextModel::Gemma4TextModel(const GemmaConfig& config, const WeightView& w, DType dtype, Device device)
    : config_(config), dtype_(dtype), device_(device) {
  LTX2_CHECK(config.gemma4, "gemma 4: the config is not a Gemma 4 one (model_type '{}')", config.model_type);
  const int64_t D = config.hidden_size, L = config.num_layers;
  embedding_ = GemmaEmbedding(config, w, dtype);
  auto norm = [&](const WeightView& v, const std::string& key, int64_t dim) {
    return v.load(key, {dim}).to(device);  // float32 whatever the model dtype, as HF's norms
  };
  final_norm_ = norm(w, "norm.weight", D);
  const int64_t first_shared = L - config.num_kv_shared_layers;
  for (int64_t i = 0; i < L; ++i) {
    WeightView l = w.sub("layers." + std::to_string(i) + ".");
    Layer layer;
    layer.sliding = config.layer_is_sliding[i];
    layer.head_dim = config.layer_head_dim(i);
    layer.kv_heads = config.layer_kv_heads(i);
    const int64_t hd = layer.head_dim, qd = config.num_heads * hd, kvd = layer.kv_heads * hd;
    const int64_t I = config.intermediate_size * (config.double_wide_mlp && i >= first_shared ? 2 : 1);
    layer.input_norm = norm(l, "input_layernorm.weight", D);
    layer.post_attn_norm = norm(l, "post_attention_layernorm.weight", D);
    layer.pre_ff_norm = norm(l, "pre_feedforward_layernorm.weight", D);
    layer.post_ff_norm = norm(l, "post_feedforward_layernorm.weight", D);
    layer.q_proj = l.load("self_attn.q_proj.weight", {qd, D}, dtype, device);
    layer.q_norm = norm(l, "self_attn.q_norm.weight", hd);
    layer.o_proj = l.load("self_attn.o_proj.weight", {D, qd}, dtype, device);
    if (i >= first_shared) {
      for (int64_t k = first_shared - 1; k >= 0; --k)
        if (config.layer_is_sliding[k] == layer.sliding) {
          layer.kv_source = k;
          layers_[k].keeps_kv = true;
          break;
        }
      LTX2_CHECK(layer.kv_source >= 0,
                 "gemma 4: layer {} shares keys and values, but no earlier layer has its type", i);
    } else {
      layer.k_proj = l.load("self_attn.k_proj.weight", {kvd, D}, dtype, device);
      layer.k_norm = norm(l, "self_attn.k_norm.weight", hd);
      if (!(config.attention_k_eq_v && !layer.sliding))
        layer.v_proj = l.load("self_attn.v_proj.weight", {kvd, D}, dtype, device);
    }
    layer.gate_proj = l.load("mlp.gate_proj.weight", {I, D}, dtype, device);
    layer.up_proj = l.load("mlp.up_proj.weight", {I, D}, dtype, device);
    layer.down_proj = l.load("mlp.down_proj.weight", {D, I}, dtype, device);
    layer.scalar = l.load("layer_scalar", {1}).to_vector()[0];
    layers_.push_back(std::move(layer));
  }
}

std::unique_ptr<Gemma4TextModel> Gemma4TextModel::open(const std::string& root, DType dtype, Device device) {
  Gemma3TextModel::Source src = Gemma3TextModel::locate(root);
  LTX2_CHECK(src.config.gemma4, "{}: Gemma model_type '{}' is not gemma4_unified", root,
             src.config.model_type);
  return std::make_unique<Gemma4TextModel>(src.config, src.view(), dtype, device);
}

// The rows are gathered and scaled on the host (the table stays in the file), then moved. The
// multimodal placeholders are embedded as the pad token, as Gemma4UnifiedModel does.
Tensor Gemma4TextModel::embed(const Tensor& ids) const {
  std::vector<int64_t> v = ids.to(Device::cpu()).contiguous().to_vector_i64();
  const auto& placeholders = config_.placeholder_token_ids;
  for (int64_t& id : v)
    if (std::find(placeholders.begin(), placeholders.end(), id) != placeholders.end())
      id = config_.pad_token_id;
  return embedding_.rows(v, ids.size(0), ids.size(1), dtype_, device_);
}

std::vector<Tensor> Gemma4TextModel::forward(const Tensor& ids, const Tensor& mask) const {
  LTX2_CHECK(ids.dim() == 2 && mask.shape() == ids.shape(), "gemma: ids {} and mask {} must both be [B, T]",
             ids.str(), mask.str());
  const int64_t B = ids.size(0), T = ids.size(1), H = config_.num_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const int64_t local_dim = config_.head_dim;
  const int64_t global_dim = config_.global_head_dim > 0 ? config_.global_head_dim : config_.head_dim;
  // HF: int(partial_rotary_factor * head_dim // 2) pairs rotate.
  const auto global_rotated = static_cast<int64_t>(
      std::floor(config_.rope_global_partial_factor * static_cast<double>(global_dim) / 2.0));
  const ops::RopeTables local =
      gemma_rope_tables(0, T, local_dim, local_dim / 2, config_.rope_local_theta, 1.0, device_);
  const ops::RopeTables global =
      gemma_rope_tables(0, T, global_dim, global_rotated, config_.rope_global_theta,
                        config_.rope_global_linear_factor, device_);
  const std::vector<int64_t> m = mask.to(Device::cpu()).contiguous().to_vector_i64();
  const GemmaAttentionMask local_mask =
      gemma_attention_mask(m, B, T, true, config_.sliding_window, dtype_, device_);
  const GemmaAttentionMask global_mask = gemma_attention_mask(m, B, T, false, 0, dtype_, device_);

  std::vector<Tensor> keys(layers_.size()), values(layers_.size());  // of the layers others share
  std::vector<Tensor> states;
  Tensor h = embed(ids);
  states.push_back(h);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    const ops::RopeTables& rope = L.sliding ? local : global;
    const GemmaAttentionMask& am = L.sliding ? local_mask : global_mask;
    const int64_t hd = L.head_dim, Hkv = L.kv_heads;

    Tensor x = ops::rms_norm(h, L.input_norm, eps);
    // Projection -> per-head norm -> RoPE, as [B, n, T, hd].
    auto heads = [&](const Tensor& t, int64_t n, const Tensor& norm, bool rotate) {
      Tensor y = ops::rms_norm(t.view({B, T, n, hd}), norm, eps).view({B, T, n * hd});
      if (rotate) y = gemma_rotate_heads(y, rope, n);
      return y.view({B, T, n, hd}).permute({0, 2, 1, 3});
    };
    Tensor q = heads(ops::linear(x, L.q_proj), H, L.q_norm, true);
    Tensor k, v;
    if (L.kv_source >= 0) {
      k = keys[L.kv_source];
      v = values[L.kv_source];
    } else {
      const Tensor k_raw = ops::linear(x, L.k_proj);
      k = heads(k_raw, Hkv, L.k_norm, true);
      v = heads(L.v_proj.defined() ? ops::linear(x, L.v_proj) : k_raw, Hkv, Tensor(), false);
      if (L.keeps_kv) {
        keys[i] = k;
        values[i] = v;
      }
    }
    // Unscaled scores (q and k are normalised); KV heads map to query heads as HF's repeat_kv.
    Tensor o = ops::mul(ops::attention(q, k, v, am.additive, 1.f), am.seen);
    Tensor a = ops::linear(o.permute({0, 2, 1, 3}).reshape({B, T, H * hd}), L.o_proj);
    h = ops::add(h, ops::rms_norm(a, L.post_attn_norm, eps));
    Tensor n = ops::rms_norm(h, L.pre_ff_norm, eps);
    Tensor f = ops::linear(ops::mul(ops::gelu_tanh(ops::linear(n, L.gate_proj)), ops::linear(n, L.up_proj)),
                           L.down_proj);
    h = ops::add(h, ops::rms_norm(f, L.post_ff_norm, eps));
    if (L.scalar != 1.f) h = ops::mul(h, L.scalar);
    states.push_back(i + 1 == layers_.size() ? ops::rms_norm(h, final_norm_, eps) : h);
  }
  return states;
}

}  // namespace ltx2
