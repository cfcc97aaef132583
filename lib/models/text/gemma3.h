// The Gemma 3 text decoder as LTX uses it: token ids and an attention mask in, every hidden state
// out (index 0 = scaled embeddings, l = output of decoder layer l, L = last layer after the final
// norm), the way Hugging Face's Gemma3TextModel returns them with output_hidden_states.
//
// Layers follow HF modeling_gemma3: pre/post norms around attention and MLP (Gemma RMSNorm, weight
// applied as 1 + w), per-head q/k norms, split-half RoPE with a per-layer-type base (sliding layers
// the local theta, global layers the global theta with linear scaling), GQA, causal + key-padding
// mask plus the sliding window, gelu(tanh)-gated MLP. Positions are 0..T-1 over the padded row.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/gemma_config.h"
#include "io/weights.h"
#include "models/text/gemma_layers.h"
#include "ops/rope.h"

namespace ltx2 {

class Gemma3TextModel {
 public:
  // Loads the language-model tensors through `weights` (keys relative to the text model, e.g.
  // "layers.0.self_attn.q_proj.weight"), checking every shape against `config`. The projections
  // are held in `dtype` on `device`; the norm weights stay float32 (the reference forms 1 + w and
  // normalises in float32); the embedding table stays in the file (rows gathered on the host).
  Gemma3TextModel(const GemmaConfig& config, const WeightView& weights, DType dtype = DType::F32,
                  Device device = Device::cpu());

  // A Gemma root: a Hugging Face folder (config.json + model.safetensors or a sharded index), or a
  // single text-encoder .safetensors file whose metadata carries the config ("gemma_config", or
  // "config" with a "text_config") or that sits next to a config.json. locate() maps the files and
  // reads the config without loading any tensor; open() also loads the model.
  struct Source {
    GemmaConfig config;
    std::shared_ptr<const WeightSet> weights;
    std::shared_ptr<const nlohmann::json> raw_config;  // the whole config it was parsed from
    WeightView view() const;
  };
  static Source locate(const std::string& root);
  // true when `file` is a .safetensors file holding Gemma's language-model tensors (a packed
  // text-encoder file); reads the header only.
  static bool held_by(const std::string& file);
  static std::unique_ptr<Gemma3TextModel> open(const std::string& root, DType dtype = DType::F32,
                                               Device device = Device::cpu());

  const GemmaConfig& config() const { return config_; }

  // ids, mask: [B, T] int64 on any device (read on the host; mask 1 = token, 0 = pad). Returns
  // num_layers + 1 tensors [B, T, D] in the model's dtype on its device.
  std::vector<Tensor> forward(const Tensor& ids, const Tensor& mask) const;

  // Autoregressive decoding of one sequence (prompt enhancement). The cache holds every layer's
  // keys and values so far, [1, Hkv, capacity, hd] in the model's dtype on its device, the first
  // `length` positions written; positions run 0, 1, ... from the sequence's first token (a
  // left-padded batch of one, as Hugging Face's generate() runs it, gives the same: pads neither
  // count as positions nor are seen).
  struct KvCache {
    std::vector<Tensor> keys, values;
    int64_t length = 0;
    int64_t capacity() const { return keys.empty() ? 0 : keys[0].size(2); }
  };
  KvCache make_cache(int64_t capacity) const;
  // Runs `ids` (the next tokens of the sequence) through the layers, appending their keys and
  // values to the cache, and returns the last token's final hidden state [1, D] (after the final
  // norm). Refuses ids past the cache's capacity.
  Tensor extend(const std::vector<int64_t>& ids, KvCache& cache) const;
  // The same for tokens given as embeddings [1, T, D] (model dtype; image features in place of the
  // image tokens' rows: embed_tokens), with Gemma 3's image attention: `image_block` [T] is -1 for a
  // text token, else the index of the image whose soft tokens it is; a token of an image block also
  // sees every token of its block, later ones included (Hugging Face's token_type_ids mask, OR-ed with
  // the causal and sliding-window rule of each layer).
  Tensor extend(const Tensor& embeds, const std::vector<int64_t>& image_block, KvCache& cache) const;
  // The scaled embedding rows of one sequence, [1, T, D] in the model's dtype on its device (ids
  // checked against the vocabulary).
  Tensor embed_tokens(const std::vector<int64_t>& ids) const;
  // The LM head: the tied embedding table [vocab, D] in the model's dtype on its device, a copy
  // (2 GiB for the 12B in bf16) that the caller holds while it decodes and then drops.
  Tensor lm_head() const;
  // Next-token logits [1, vocab] float32 (host) of a final hidden state [1, D].
  Tensor logits(const Tensor& hidden, const Tensor& lm_head) const;

 private:
  struct Layer {
    bool sliding = false;
    Tensor input_norm, post_attn_norm, pre_ff_norm, post_ff_norm;  // stored as 1 + w
    Tensor q_proj, k_proj, v_proj, o_proj, q_norm, k_norm;
    Tensor gate_proj, up_proj, down_proj;
  };
  GemmaConfig config_;
  DType dtype_;
  Device device_;
  GemmaEmbedding embedding_;
  Tensor final_norm_;  // 1 + w
  std::vector<Layer> layers_;

  Tensor embed(const Tensor& ids) const;
  // The attention of one layer on its normalized input x [B, T, D]. Rope tables at the new tokens'
  // positions; mask: additive [B, 1, T, Tk]; seen: [B, 1, T, 1] 1 where the query row sees a key.
  // With a cache (B = 1) the new keys and values are written at cache->length and the queries
  // attend to every cached position before them too (Tk = length + T).
  Tensor attention(const Layer& layer, const Tensor& x, const Tensor& mask, const Tensor& seen,
                   const ops::RopeTables& rope, KvCache* cache = nullptr, size_t layer_index = 0) const;
  // One decoder layer around its attention (given the normalized input, returns the attention).
  Tensor layer(const Layer& L, const Tensor& h, const std::function<Tensor(const Tensor&)>& attend) const;
};

}  // namespace ltx2
