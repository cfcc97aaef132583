// Gemma 3 text decoder (see gemma3.h). Float32 math on the reference's rounding points: the RoPE
// inverse frequencies and angles in float32 as HF forms them, norms in float32. Everything that
// depends only on the tokens (embedding rows, RoPE tables, masks) is formed on the host once per
// forward and moved to the model's device before the layers run.
#include "models/text/gemma3.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/layout.h"
#include "models/text/gemma_layers.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace ltx2 {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Float32 whatever the model dtype: HF's Gemma3RMSNorm multiplies by 1.0 + weight.float().
Tensor load_norm_plus_one(const WeightView& w, const std::string& key, int64_t dim, Device device) {
  return ops::add(w.load(key, {dim}), 1.f).to(device);
}

}  // namespace

Gemma3TextModel::Gemma3TextModel(const GemmaConfig& config, const WeightView& w, DType dtype, Device device)
    : config_(config), dtype_(dtype), device_(device) {
  const int64_t D = config.hidden_size, I = config.intermediate_size, hd = config.head_dim;
  const int64_t qd = config.num_heads * hd, kvd = config.num_kv_heads * hd;
  embedding_ = GemmaEmbedding(config, w, dtype);
  final_norm_ = load_norm_plus_one(w, "norm.weight", D, device);
  for (int64_t i = 0; i < config.num_layers; ++i) {
    WeightView l = w.sub("layers." + std::to_string(i) + ".");
    Layer L;
    L.sliding = config.layer_is_sliding[i];
    L.input_norm = load_norm_plus_one(l, "input_layernorm.weight", D, device);
    L.post_attn_norm = load_norm_plus_one(l, "post_attention_layernorm.weight", D, device);
    L.pre_ff_norm = load_norm_plus_one(l, "pre_feedforward_layernorm.weight", D, device);
    L.post_ff_norm = load_norm_plus_one(l, "post_feedforward_layernorm.weight", D, device);
    L.q_proj = l.load("self_attn.q_proj.weight", {qd, D}, dtype, device);
    L.k_proj = l.load("self_attn.k_proj.weight", {kvd, D}, dtype, device);
    L.v_proj = l.load("self_attn.v_proj.weight", {kvd, D}, dtype, device);
    L.o_proj = l.load("self_attn.o_proj.weight", {D, qd}, dtype, device);
    L.q_norm = load_norm_plus_one(l, "self_attn.q_norm.weight", hd, device);
    L.k_norm = load_norm_plus_one(l, "self_attn.k_norm.weight", hd, device);
    L.gate_proj = l.load("mlp.gate_proj.weight", {I, D}, dtype, device);
    L.up_proj = l.load("mlp.up_proj.weight", {I, D}, dtype, device);
    L.down_proj = l.load("mlp.down_proj.weight", {D, I}, dtype, device);
    layers_.push_back(std::move(L));
  }
}

WeightView Gemma3TextModel::Source::view() const {
  return WeightView(weights, component_prefixes(Component::TextModel), "gemma text model");
}

Gemma3TextModel::Source Gemma3TextModel::locate(const std::string& root) {
  std::shared_ptr<const WeightSet> set;
  GemmaConfig config;
  auto raw = std::make_shared<json>();
  // The config file's JSON as well as its parse (the vision tower reads its own part of it).
  auto read_json = [&](const fs::path& file) {
    std::ifstream in(file);
    *raw = json::parse(in, nullptr, false);
    if (raw->is_discarded()) *raw = json::object();  // load_gemma_config has named the fault already
  };
  if (fs::is_directory(root)) {
    fs::path cfg = fs::path(root) / "config.json";
    LTX2_CHECK(fs::exists(cfg), "{}: Gemma folder has no config.json", root);
    config = load_gemma_config(cfg.string());
    read_json(cfg);
    set = WeightSet::open_hf_folder(root);
  } else {
    LTX2_CHECK(fs::exists(root), "{}: no such Gemma folder or text-encoder file", root);
    set = WeightSet::open({root});
    std::string packed = set->metadata_value("gemma_config");
    fs::path sibling = fs::path(root).parent_path() / "config.json";
    if (!packed.empty()) {
      json j;
      try {
        j = json::parse(packed);
      } catch (const json::exception&) {
        LTX2_FAIL("{}: metadata 'gemma_config' is not valid JSON", root);
      }
      config = parse_gemma_config(j);
      *raw = j;
    } else if (set->config().contains("text_config")) {
      config = parse_gemma_config(set->config());
      *raw = set->config();
    } else {
      LTX2_CHECK(fs::exists(sibling),
                 "{}: carries no Gemma config (metadata 'gemma_config') and has no config.json beside it",
                 root);
      config = load_gemma_config(sibling.string());
      read_json(sibling);
    }
  }
  return {config, set, raw};
}

bool Gemma3TextModel::held_by(const std::string& file) {
  if (fs::is_directory(file) || fs::path(file).extension() != ".safetensors") return false;
  const auto f = SafetensorsFile::open(file);
  for (const TensorInfo& t : f->tensors())
    if (classify_key(t.name) == Component::TextModel) return true;
  return false;
}

std::unique_ptr<Gemma3TextModel> Gemma3TextModel::open(const std::string& root, DType dtype, Device device) {
  Source src = locate(root);
  return std::make_unique<Gemma3TextModel>(src.config, src.view(), dtype, device);
}

// The rows are gathered and scaled on the host (the table stays in the file), then moved.
Tensor Gemma3TextModel::embed(const Tensor& ids) const {
  return embedding_.rows(ids.to(Device::cpu()).contiguous().to_vector_i64(), ids.size(0), ids.size(1), dtype_,
                         device_);
}

Tensor Gemma3TextModel::attention(const Layer& L, const Tensor& x, const Tensor& mask, const Tensor& seen,
                                  const ops::RopeTables& rope, KvCache* cache, size_t layer_index) const {
  const int64_t B = x.size(0), T = x.size(1), hd = config_.head_dim;
  const int64_t H = config_.num_heads, Hkv = config_.num_kv_heads;
  const float eps = static_cast<float>(config_.rms_norm_eps);
  // Projection -> per-head norm -> RoPE, as [B, n, T, hd].
  auto heads = [&](const Tensor& w, int64_t n, const Tensor& norm) {
    Tensor t = ops::linear(x, w);
    if (norm.defined())
      t = gemma_rotate_heads(ops::rms_norm(t.view({B, T, n, hd}), norm, eps).view({B, T, n * hd}), rope, n);
    return t.view({B, T, n, hd}).permute({0, 2, 1, 3});
  };
  Tensor q = heads(L.q_proj, H, L.q_norm);
  Tensor k = heads(L.k_proj, Hkv, L.k_norm);
  Tensor v = heads(L.v_proj, Hkv, Tensor());
  if (cache) {
    const int64_t end = cache->length + T;
    cache->keys[layer_index].narrow(2, cache->length, T).copy_(k);
    cache->values[layer_index].narrow(2, cache->length, T).copy_(v);
    k = cache->keys[layer_index].narrow(2, 0, end).contiguous();
    v = cache->values[layer_index].narrow(2, 0, end).contiguous();
  }
  float scale = static_cast<float>(1.0 / std::sqrt(config_.query_pre_attn_scalar));
  // k, v keep their Hkv heads: ops::attention maps query head h to KV head h / (H / Hkv), HF's
  // repeat_kv without the copy.
  Tensor o = ops::mul(ops::attention(q, k, v, mask, scale), seen);
  return ops::linear(o.permute({0, 2, 1, 3}).reshape({B, T, H * hd}), L.o_proj);
}

std::vector<Tensor> Gemma3TextModel::forward(const Tensor& ids, const Tensor& mask) const {
  LTX2_CHECK(ids.dim() == 2 && mask.shape() == ids.shape(), "gemma: ids {} and mask {} must both be [B, T]",
             ids.str(), mask.str());
  const int64_t B = ids.size(0), T = ids.size(1);
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const ops::RopeTables local =
      gemma_rope_tables(0, T, config_.head_dim, config_.head_dim / 2, config_.rope_local_theta, 1.0, device_);
  const ops::RopeTables global =
      gemma_rope_tables(0, T, config_.head_dim, config_.head_dim / 2, config_.rope_global_theta,
                        config_.rope_global_linear_factor, device_);
  const std::vector<int64_t> m = mask.to(Device::cpu()).contiguous().to_vector_i64();
  const GemmaAttentionMask local_mask =
      gemma_attention_mask(m, B, T, true, config_.sliding_window, dtype_, device_);
  const GemmaAttentionMask global_mask = gemma_attention_mask(m, B, T, false, 0, dtype_, device_);

  std::vector<Tensor> states;
  Tensor h = embed(ids);
  states.push_back(h);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    const ops::RopeTables& rope = L.sliding ? local : global;
    const GemmaAttentionMask& am = L.sliding ? local_mask : global_mask;
    h = layer(L, h, [&](const Tensor& x) { return attention(L, x, am.additive, am.seen, rope); });
    states.push_back(i + 1 == layers_.size() ? ops::rms_norm(h, final_norm_, eps) : h);
  }
  return states;
}

Tensor Gemma3TextModel::layer(const Layer& L, const Tensor& h,
                              const std::function<Tensor(const Tensor&)>& attend) const {
  const float eps = static_cast<float>(config_.rms_norm_eps);
  Tensor a = attend(ops::rms_norm(h, L.input_norm, eps));
  Tensor x = ops::add(h, ops::rms_norm(a, L.post_attn_norm, eps));
  Tensor n = ops::rms_norm(x, L.pre_ff_norm, eps);
  Tensor m = ops::linear(ops::mul(ops::gelu_tanh(ops::linear(n, L.gate_proj)), ops::linear(n, L.up_proj)),
                         L.down_proj);
  return ops::add(x, ops::rms_norm(m, L.post_ff_norm, eps));
}

Gemma3TextModel::KvCache Gemma3TextModel::make_cache(int64_t capacity) const {
  LTX2_CHECK(capacity > 0, "gemma: a key/value cache needs a positive capacity, got {}", capacity);
  KvCache cache;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Shape shape = {1, config_.num_kv_heads, capacity, config_.head_dim};
    cache.keys.push_back(Tensor::zeros(shape, dtype_, device_));
    cache.values.push_back(Tensor::zeros(shape, dtype_, device_));
  }
  return cache;
}

Tensor Gemma3TextModel::embed_tokens(const std::vector<int64_t>& ids) const {
  return embedding_.rows(ids, 1, static_cast<int64_t>(ids.size()), dtype_, device_);
}

Tensor Gemma3TextModel::extend(const std::vector<int64_t>& ids, KvCache& cache) const {
  LTX2_CHECK(!ids.empty(), "gemma: extend() needs at least one token");
  return extend(embed_tokens(ids), std::vector<int64_t>(ids.size(), -1), cache);
}

Tensor Gemma3TextModel::extend(const Tensor& embeds, const std::vector<int64_t>& image_block,
                               KvCache& cache) const {
  LTX2_CHECK(embeds.dim() == 3 && embeds.size(0) == 1 && embeds.size(2) == config_.hidden_size,
             "gemma: extend() takes embeddings [1, T, {}], got {}", config_.hidden_size, embeds.str());
  const int64_t T = embeds.size(1), past = cache.length, end = past + T;
  LTX2_CHECK(T > 0, "gemma: extend() needs at least one token");
  LTX2_CHECK(static_cast<int64_t>(image_block.size()) == T, "gemma: {} image-block entries for {} tokens",
             image_block.size(), T);
  LTX2_CHECK(end <= cache.capacity(), "gemma: {} tokens exceed the key/value cache's {} positions", end,
             cache.capacity());
  const float eps = static_cast<float>(config_.rms_norm_eps);
  const ops::RopeTables local = gemma_rope_tables(past, T, config_.head_dim, config_.head_dim / 2,
                                                  config_.rope_local_theta, 1.0, device_);
  const ops::RopeTables global =
      gemma_rope_tables(past, T, config_.head_dim, config_.head_dim / 2, config_.rope_global_theta,
                        config_.rope_global_linear_factor, device_);
  // Hugging Face's create_masks_for_vision_model: query q (position past + q) sees key k <= past + q
  // or, both in the same image block, any key of that block (keys cached before this call belong to
  // no block of it); in sliding layers only keys k > past + q - window of those (the window AND-ed
  // after the OR).
  auto mask = [&](bool sliding) {
    Tensor additive = Tensor::empty({1, 1, T, end});
    float* p = additive.data<float>();
    for (int64_t q = 0; q < T; ++q)
      for (int64_t k = 0; k < end; ++k) {
        const bool same_image = k >= past && image_block[q] >= 0 && image_block[q] == image_block[k - past];
        const bool in_window = !sliding || k > past + q - config_.sliding_window;
        p[q * end + k] =
            (k <= past + q || same_image) && in_window ? 0.f : std::numeric_limits<float>::lowest();
      }
    return additive.to(device_);
  };
  const Tensor local_mask = mask(true), global_mask = mask(false);
  const Tensor seen = Tensor::full({1, 1, T, 1}, 1.f, dtype_, device_);  // every query sees itself

  Tensor h = embeds.to(dtype_).to(device_);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& L = layers_[i];
    h = layer(L, h, [&](const Tensor& x) {
      return attention(L, x, L.sliding ? local_mask : global_mask, seen, L.sliding ? local : global, &cache,
                       i);
    });
  }
  cache.length = end;
  return ops::rms_norm(h.select(1, T - 1), final_norm_, eps);
}

Tensor Gemma3TextModel::lm_head() const {
  return embedding_.table.to(dtype_).to(device_);
}

Tensor Gemma3TextModel::logits(const Tensor& hidden, const Tensor& lm_head) const {
  return ops::linear(hidden, lm_head).to(DType::F32).to(Device::cpu());
}

}  // namespace ltx2
