// Gemma 3 text config parsing. Defaults are Hugging Face Gemma3TextConfig's (google/gemma-3-12b-it's
// config.json omits head_dim, query_pre_attn_scalar, rope_theta, rope_local_base_freq, ...).
#include "io/configs/gemma_config.h"

#include <fstream>

#include "core/error.h"
#include "io/config_reader.h"

namespace ltx2 {

using json = nlohmann::json;

namespace {

// RoPE settings of one attention type from transformers 5's "rope_parameters" entry.
void read_rope_parameters(const ConfigReader& r, const std::string& type, double* theta, double* factor,
                          bool allow_linear) {
  ConfigReader p = r.child("rope_parameters").child(type);
  std::vector<std::string> allowed = {"default"};
  if (allow_linear) allowed.push_back("linear");
  std::string rope_type = p.choice("rope_type", allowed, "default");
  *theta = p.number("rope_theta");
  *factor = rope_type == "linear" ? p.number("factor") : 1.0;
}

}  // namespace

GemmaConfig parse_gemma_config(const json& j) {
  GemmaConfig c;
  ConfigReader top(j, "gemma");
  bool nested = top.has("text_config");
  if (nested) {
    c.model_type = top.choice("model_type", {"gemma3"});
    if (top.has("gemma_version")) {
      const json& v = top.raw().at("gemma_version");
      c.gemma_version = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  ConfigReader r = nested ? top.child("text_config") : ConfigReader(j, "gemma text");
  r.choice("model_type", {"gemma3_text"}, "gemma3_text");
  c.vocab_size = r.integer("vocab_size", 262208);
  c.hidden_size = r.integer("hidden_size", 2304);
  c.intermediate_size = r.integer("intermediate_size", 9216);
  c.num_layers = r.integer("num_hidden_layers", 26);
  c.num_heads = r.integer("num_attention_heads", 8);
  c.num_kv_heads = r.integer("num_key_value_heads", 4);
  c.head_dim = r.integer("head_dim", 256);
  c.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 256);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.sliding_window = r.integer("sliding_window", 4096);
  c.bos_token_id = r.integer("bos_token_id", 2);
  for (const ConfigReader* where : {&top, &r}) {
    if (!where->has("eos_token_id")) continue;
    c.eos_token_ids = where->raw().at("eos_token_id").is_array() ? where->integers("eos_token_id")
                                                                  : std::vector<int64_t>{where->integer("eos_token_id")};
    break;
  }
  r.choice("hidden_activation", {"gelu_pytorch_tanh"}, "gelu_pytorch_tanh");
  r.require_equal("attention_bias", false);
  r.require_equal("use_bidirectional_attention", false);
  if (r.has("attn_logit_softcapping")) r.fail("attn_logit_softcapping", "is set; not supported");
  LTX2_CHECK(c.num_layers > 0 && c.num_heads > 0 && c.num_kv_heads > 0 && c.head_dim > 0 &&
                 c.num_heads % c.num_kv_heads == 0 && c.head_dim % 2 == 0 && c.hidden_size > 0,
             "gemma config: inconsistent sizes (layers {}, heads {}, kv heads {}, head_dim {}, hidden {})",
             c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_size);

  if (r.has("layer_types")) {
    auto types = r.raw().at("layer_types");
    LTX2_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.num_layers,
               "gemma config: 'layer_types' must list {} layers", c.num_layers);
    for (const auto& t : types) {
      LTX2_CHECK(t == "sliding_attention" || t == "full_attention",
                 "gemma config: 'layer_types' entry {} is not sliding_attention or full_attention", t.dump());
      c.layer_is_sliding.push_back(t == "sliding_attention");
    }
  } else {
    int64_t pattern = r.integer("sliding_window_pattern", 6);
    LTX2_CHECK(pattern > 0, "gemma config: 'sliding_window_pattern' must be positive");
    for (int64_t i = 0; i < c.num_layers; ++i) c.layer_is_sliding.push_back((i + 1) % pattern != 0);
  }

  if (r.has("rope_parameters")) {
    double unused_factor = 1;
    read_rope_parameters(r, "sliding_attention", &c.rope_local_theta, &unused_factor, false);
    read_rope_parameters(r, "full_attention", &c.rope_global_theta, &c.rope_global_linear_factor, true);
  } else {
    c.rope_global_theta = r.number("rope_theta", 1e6);
    c.rope_local_theta = r.number("rope_local_base_freq", 1e4);
    if (r.has("rope_scaling")) {
      ConfigReader s = r.child("rope_scaling");
      std::string type = s.has("rope_type") ? s.choice("rope_type", {"linear", "default"})
                                            : s.choice("type", {"linear", "default"});
      c.rope_global_linear_factor = type == "linear" ? s.number("factor") : 1.0;
    }
  }
  return c;
}

GemmaConfig load_gemma_config(const std::string& path) {
  std::ifstream in(path);
  LTX2_CHECK(in.good(), "{}: cannot open the Gemma config", path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception&) {
    LTX2_FAIL("{}: not valid JSON", path);
  }
  try {
    return parse_gemma_config(j);
  } catch (const Error& e) {
    LTX2_FAIL("{}: {}", path, e.what());
  }
}

}  // namespace ltx2
