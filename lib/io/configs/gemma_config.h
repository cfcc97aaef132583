// Typed config of a Gemma text decoder, read from a Hugging Face config.json (top level with a
// "text_config" object, or a bare text config): Gemma 3 (model_type "gemma3" / "gemma3_text", with
// Hugging Face's Gemma3TextConfig defaults for the keys the published files leave out) or Gemma 4 as
// LTX-2.5 encodes with it (model_type "gemma4_unified" / "gemma4_unified_text", with
// Gemma4UnifiedTextConfig's defaults). Anything we do not implement (attention soft-capping,
// attention bias, another activation, bidirectional text attention, another RoPE type, Gemma 4's
// per-layer input embeddings) is refused naming the key.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ltx2 {

struct GemmaConfig {
  std::string model_type;     // top-level model_type ("gemma3"), "" for a bare text config
  std::string gemma_version;  // top-level "gemma_version", "" when absent (LTX-2.4+ checks it)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  double query_pre_attn_scalar = 0;  // attention scale = query_pre_attn_scalar^-0.5
  double rms_norm_eps = 0;
  int64_t sliding_window = 0;
  std::vector<bool> layer_is_sliding;    // one per layer
  double rope_global_theta = 0;          // full-attention layers
  double rope_global_linear_factor = 1;  // linear scaling of the global layers (inv_freq / factor)
  double rope_local_theta = 0;           // sliding-attention layers
  int64_t bos_token_id = 2;              // must agree with tokenizer.model
  // Where generation stops (prompt enhancement): "eos_token_id", an id or a list, of the top-level
  // config (Gemma 3 instruct: <eos> and <end_of_turn>), else of the text config.
  std::vector<int64_t> eos_token_ids = {1};

  // Gemma 4 (gemma4_unified) only; a Gemma 3 config leaves these as they are here. Its attention
  // scale is 1 (query_pre_attn_scalar stays 0), its norms multiply by w (not 1 + w) and also
  // normalise the values (no weight), each layer's output is scaled by its `layer_scalar` tensor.
  bool gemma4 = false;
  int64_t global_head_dim = 0;            // head dim of the full-attention layers ("global_head_dim")
  bool attention_k_eq_v = false;          // full-attention layers: values = the keys' projection
  int64_t num_global_kv_heads = 0;        // their KV heads when attention_k_eq_v
  int64_t num_kv_shared_layers = 0;       // the last N layers reuse earlier layers' keys and values
  bool double_wide_mlp = false;           // those N layers' MLP is 2 x intermediate_size wide
  double rope_global_partial_factor = 1;  // "proportional" RoPE: the rotated fraction of the pairs
  int64_t pad_token_id = 0;
  // Ids the multimodal model embeds as pad_token_id (its image / video / audio placeholders).
  std::vector<int64_t> placeholder_token_ids;

  int64_t num_hidden_states() const { return num_layers + 1; }
  // Layer i's head dim and KV head count (Gemma 4's full-attention layers differ).
  int64_t layer_head_dim(int64_t i) const {
    return gemma4 && !layer_is_sliding[i] && global_head_dim > 0 ? global_head_dim : head_dim;
  }
  int64_t layer_kv_heads(int64_t i) const {
    return gemma4 && !layer_is_sliding[i] && attention_k_eq_v ? num_global_kv_heads : num_kv_heads;
  }
};

GemmaConfig parse_gemma_config(const nlohmann::json& j);
// Reads and parses a config.json; errors name the file.
GemmaConfig load_gemma_config(const std::string& path);

}  // namespace ltx2
