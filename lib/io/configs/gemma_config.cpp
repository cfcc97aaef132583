// Gemma text config parsing. Gemma 3's defaults are Hugging Face Gemma3TextConfig's
// (google/gemma-3-12b-it's config.json omits head_dim, query_pre_attn_scalar, rope_theta,
// rope_local_base_freq, ...); Gemma 4's are Gemma4UnifiedTextConfig's (transformers 5.14).
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

// layer_types: one "sliding_attention" or "full_attention" a layer, into c.layer_is_sliding.
void read_layer_types(const ConfigReader& r, GemmaConfig& c) {
  auto types = r.raw().at("layer_types");
  LTX2_CHECK(types.is_array() && static_cast<int64_t>(types.size()) == c.num_layers,
             "gemma config: 'layer_types' must list {} layers", c.num_layers);
  for (const auto& t : types) {
    LTX2_CHECK(t == "sliding_attention" || t == "full_attention",
               "gemma config: 'layer_types' entry {} is not sliding_attention or full_attention", t.dump());
    c.layer_is_sliding.push_back(t == "sliding_attention");
  }
}

void read_eos_token_ids(const ConfigReader& top, const ConfigReader& r, GemmaConfig& c) {
  for (const ConfigReader* where : {&top, &r}) {
    if (!where->has("eos_token_id")) continue;
    c.eos_token_ids = where->raw().at("eos_token_id").is_array()
                          ? where->integers("eos_token_id")
                          : std::vector<int64_t>{where->integer("eos_token_id")};
    break;
  }
}

// Gemma 4 as Gemma4UnifiedTextConfig reads it (the text path of Gemma4UnifiedModel): `top` is the
// whole config when nested (its placeholder token ids), else the text config itself.
void parse_gemma4_text(const ConfigReader& top, const ConfigReader& r, bool nested, GemmaConfig& c) {
  c.gemma4 = true;
  r.choice("model_type", {"gemma4_unified_text"}, "gemma4_unified_text");
  c.vocab_size = r.integer("vocab_size", 262144);
  c.hidden_size = r.integer("hidden_size", 2304);
  c.intermediate_size = r.integer("intermediate_size", 9216);
  c.num_layers = r.integer("num_hidden_layers", 30);
  c.num_heads = r.integer("num_attention_heads", 8);
  c.num_kv_heads = r.integer("num_key_value_heads", 4);
  c.head_dim = r.integer("head_dim", 256);
  // An explicit null means "as head_dim" (0 here), as Gemma4UnifiedTextAttention reads it.
  const bool null_global = r.raw().contains("global_head_dim") && r.raw().at("global_head_dim").is_null();
  c.global_head_dim = null_global ? 0 : r.integer("global_head_dim", 512);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.sliding_window = r.integer("sliding_window", 1024);
  c.bos_token_id = r.integer("bos_token_id", 2);
  c.pad_token_id = r.integer("pad_token_id", 0);
  read_eos_token_ids(top, r, c);
  c.attention_k_eq_v = r.boolean("attention_k_eq_v", false);
  if (c.attention_k_eq_v) {
    if (!r.has("num_global_key_value_heads"))
      r.fail("num_global_key_value_heads", "is missing; attention_k_eq_v needs it");
    c.num_global_kv_heads = r.integer("num_global_key_value_heads");
  }
  c.num_kv_shared_layers = r.integer("num_kv_shared_layers", 0);
  c.double_wide_mlp = r.boolean("use_double_wide_mlp", false);
  r.choice("hidden_activation", {"gelu_pytorch_tanh"}, "gelu_pytorch_tanh");
  r.require_equal("attention_bias", false);
  // "vision": only image tokens attend both ways (none in a text prompt); "all" is not causal.
  r.choice("use_bidirectional_attention", {"vision"}, "vision");
  if (r.has("attn_logit_softcapping")) r.fail("attn_logit_softcapping", "is set; not supported");
  for (const char* key : {"hidden_size_per_layer_input", "vocab_size_per_layer_input"})
    if (r.has(key) && !(r.raw().at(key).is_number() && r.raw().at(key).get<double>() == 0))
      r.fail(key, "is set: per-layer input embeddings (dense Gemma 4) are not supported");
  for (const char* key : {"enable_moe_block", "num_experts"})
    if (r.has(key) && r.raw().at(key) != false && r.raw().at(key) != 0)
      r.fail(key, "is set: mixture-of-experts layers are not supported");
  LTX2_CHECK(
      c.num_layers > 0 && c.num_heads > 0 && c.num_kv_heads > 0 && c.head_dim > 0 &&
          c.num_heads % c.num_kv_heads == 0 && c.head_dim % 2 == 0 && c.hidden_size > 0 &&
          c.global_head_dim >= 0 && c.global_head_dim % 2 == 0 && c.vocab_size > 0 &&
          c.intermediate_size > 0 && c.sliding_window > 0,
      "gemma config: inconsistent sizes (layers {}, heads {}, kv heads {}, head_dim {}, global_head_dim {}, "
      "hidden {}, vocab {}, intermediate {}, sliding_window {})",
      c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.global_head_dim, c.hidden_size, c.vocab_size,
      c.intermediate_size, c.sliding_window);
  if (c.attention_k_eq_v && (c.num_global_kv_heads <= 0 || c.num_heads % c.num_global_kv_heads != 0))
    r.fail("num_global_key_value_heads", "is " + std::to_string(c.num_global_kv_heads) +
                                             ", which does not divide num_attention_heads " +
                                             std::to_string(c.num_heads));
  if (c.num_kv_shared_layers < 0 || c.num_kv_shared_layers >= c.num_layers)
    r.fail("num_kv_shared_layers", "is " + std::to_string(c.num_kv_shared_layers) + "; expected 0 to " +
                                       std::to_string(c.num_layers - 1));

  if (r.has("layer_types")) {
    read_layer_types(r, c);
  } else {
    // Gemma4UnifiedTextConfig's own pattern (it reads no sliding_window_pattern key).
    if (r.has("sliding_window_pattern") && r.integer("sliding_window_pattern") != 6)
      r.fail("sliding_window_pattern",
             "is not read by Gemma 4 (its layers follow a pattern of 6); give layer_types");
    for (int64_t i = 0; i < c.num_layers; ++i) c.layer_is_sliding.push_back((i + 1) % 6 != 0);
  }
  c.layer_is_sliding.back() = false;  // as Gemma4UnifiedTextConfig forces (with a warning)
  for (int64_t i = c.num_layers - c.num_kv_shared_layers; i < c.num_layers; ++i) {
    bool earlier = false;  // a shared layer reuses the last unshared layer of its type
    for (int64_t k = 0; k < c.num_layers - c.num_kv_shared_layers; ++k)
      earlier = earlier || c.layer_is_sliding[k] == c.layer_is_sliding[i];
    if (!earlier)
      r.fail("num_kv_shared_layers",
             "shares layer " + std::to_string(i) + "'s keys and values, but no unshared layer has its type");
  }

  // RoPE: sliding layers "default" over head_dim; full layers "proportional" over the global head
  // dim (the first partial_rotary_factor of the pairs rotate, the rest keep angle 0), or "default"
  // over head_dim (Hugging Face's default RoPE reads head_dim, so the head dims must agree).
  c.rope_local_theta = 1e4;
  c.rope_global_theta = 1e6;
  c.rope_global_partial_factor = 0.25;
  std::string global_type = "proportional";
  if (r.has("rope_parameters")) {
    ConfigReader all = r.child("rope_parameters");
    ConfigReader local = all.child("sliding_attention");
    local.choice("rope_type", {"default"});
    c.rope_local_theta = local.number("rope_theta");
    ConfigReader global = all.child("full_attention");
    global_type = global.choice("rope_type", {"default", "proportional"});
    c.rope_global_theta = global.number("rope_theta");
    c.rope_global_partial_factor =
        global_type == "proportional" ? global.number("partial_rotary_factor", 1.0) : 1.0;
    c.rope_global_linear_factor = global_type == "proportional" ? global.number("factor", 1.0) : 1.0;
    if (!(c.rope_global_partial_factor > 0 && c.rope_global_partial_factor <= 1))
      global.fail("partial_rotary_factor", "must be in (0, 1]");
    if (!(c.rope_global_linear_factor > 0)) global.fail("factor", "must be positive");
  }
  // (Proportional RoPE with a null global_head_dim is formed over hidden_size / heads instead.)
  if (global_type == "proportional" && c.global_head_dim == 0 && c.hidden_size / c.num_heads != c.head_dim)
    r.fail("global_head_dim",
           "is null, and full_attention's proportional RoPE would be formed over hidden_size / "
           "num_attention_heads, not head_dim " +
               std::to_string(c.head_dim));
  if (global_type == "default" && c.global_head_dim > 0 && c.global_head_dim != c.head_dim)
    r.fail("global_head_dim", "is " + std::to_string(c.global_head_dim) +
                                  ", but full_attention's default RoPE is formed over head_dim " +
                                  std::to_string(c.head_dim));

  // The placeholders Gemma4UnifiedModel embeds as pad (its defaults when the config omits them).
  if (nested)
    for (auto [key, fallback] :
         {std::pair{"image_token_id", int64_t{258880}}, std::pair{"video_token_id", int64_t{258884}},
          std::pair{"audio_token_id", int64_t{258881}}})
      c.placeholder_token_ids.push_back(top.integer(key, fallback));
}

}  // namespace

GemmaConfig parse_gemma_config(const json& j) {
  GemmaConfig c;
  ConfigReader top(j, "gemma");
  bool nested = top.has("text_config");
  if (nested) {
    c.model_type = top.choice("model_type", {"gemma3", "gemma4_unified"});
    if (top.has("gemma_version")) {
      const json& v = top.raw().at("gemma_version");
      c.gemma_version = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  ConfigReader r = nested ? top.child("text_config") : ConfigReader(j, "gemma text");
  if (nested ? c.model_type == "gemma4_unified" : r.string("model_type", "") == "gemma4_unified_text") {
    parse_gemma4_text(top, r, nested, c);
    return c;
  }
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
  read_eos_token_ids(top, r, c);
  r.choice("hidden_activation", {"gelu_pytorch_tanh"}, "gelu_pytorch_tanh");
  r.require_equal("attention_bias", false);
  r.require_equal("use_bidirectional_attention", false);
  if (r.has("attn_logit_softcapping")) r.fail("attn_logit_softcapping", "is set; not supported");
  LTX2_CHECK(c.num_layers > 0 && c.num_heads > 0 && c.num_kv_heads > 0 && c.head_dim > 0 &&
                 c.num_heads % c.num_kv_heads == 0 && c.head_dim % 2 == 0 && c.hidden_size > 0,
             "gemma config: inconsistent sizes (layers {}, heads {}, kv heads {}, head_dim {}, hidden {})",
             c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.hidden_size);

  if (r.has("layer_types")) {
    read_layer_types(r, c);
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
