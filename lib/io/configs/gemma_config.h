// Typed config of a Gemma 3 text decoder, read from a Hugging Face config.json (top level with a
// "text_config" object, or a bare text config), with Hugging Face's Gemma3TextConfig defaults for
// the keys the published files leave out. Anything we do not implement (soft-capping, attention
// bias, another activation, bidirectional attention, another RoPE type) is refused naming the key.
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

  int64_t num_hidden_states() const { return num_layers + 1; }
};

GemmaConfig parse_gemma_config(const nlohmann::json& j);
// Reads and parses a config.json; errors name the file.
GemmaConfig load_gemma_config(const std::string& path);

}  // namespace ltx2
