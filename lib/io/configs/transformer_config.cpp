// Parsing of config["transformer"] (reference: LTXModelConfigurator.from_metadata).
#include "io/configs/transformer_config.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "io/config_reader.h"

namespace ltx2 {

namespace {

using json = nlohmann::json;

// Keys the reference asserts with check_config_value: present, with exactly this value.
const std::vector<std::pair<const char*, json>>& asserted_keys() {
  static const std::vector<std::pair<const char*, json>> keys = {
      {"dropout", 0.0},
      {"attention_bias", true},
      {"activation_fn", "gelu-approximate"},
      {"num_embeds_ada_norm", 1000},
      {"use_linear_projection", false},
      {"only_cross_attention", false},
      {"cross_attention_norm", true},
      {"double_self_attention", false},
      {"upcast_attention", false},
      {"standardization_norm", "rms_norm"},
      {"norm_elementwise_affine", false},
      {"qk_norm", "rms_norm"},
      {"positional_embedding_type", "rope"},
      {"use_audio_video_cross_attention", true},
      {"share_ff", false},
      {"av_cross_ada_norm", true},
      {"use_middle_indices_grid", true},
  };
  return keys;
}

// Keys that shape the model (read below).
constexpr std::array kShapingKeys = {"num_layers",
                                     "num_attention_heads",
                                     "attention_head_dim",
                                     "audio_num_attention_heads",
                                     "audio_attention_head_dim",
                                     "in_channels",
                                     "out_channels",
                                     "audio_in_channels",
                                     "audio_out_channels",
                                     "cross_attention_dim",
                                     "audio_cross_attention_dim",
                                     "caption_channels",
                                     "caption_proj_before_connector",
                                     "norm_eps",
                                     "positional_embedding_theta",
                                     "positional_embedding_max_pos",
                                     "audio_positional_embedding_max_pos",
                                     "timestep_scale_multiplier",
                                     "av_ca_timestep_scale_multiplier",
                                     "rope_type",
                                     "frequencies_precision",
                                     "apply_gated_attention",
                                     "cross_attention_adaln",
                                     "use_prompt_adaln_single",
                                     "ff_bias",
                                     "audio_ff_bias",
                                     "use_keyframes_abs_pos_embedding",
                                     "num_vector_embeds"};

// Keys real configs carry that the transformer does not read (the text encoder reads some), and
// the "_"-prefixed bookkeeping keys of the embedded config (_class_name, _diffusers_version).
constexpr std::array kIgnoredKeys = {"attention_type",
                                     "norm_num_groups",
                                     "causal_temporal_positioning",
                                     "use_embeddings_connector",
                                     "caption_projection_first_linear",
                                     "caption_projection_second_linear",
                                     "caption_proj_input_norm",
                                     "text_encoder_norm_type"};
constexpr std::array kIgnoredPrefixes = {"_", "connector_", "audio_connector_"};

bool known_key(const std::string& key) {
  auto is = [&](const char* k) { return key == k; };
  if (std::any_of(asserted_keys().begin(), asserted_keys().end(), [&](const auto& p) { return is(p.first); }))
    return true;
  if (std::any_of(kShapingKeys.begin(), kShapingKeys.end(), is)) return true;
  if (std::any_of(kIgnoredKeys.begin(), kIgnoredKeys.end(), is)) return true;
  return std::any_of(kIgnoredPrefixes.begin(), kIgnoredPrefixes.end(),
                     [&](const char* p) { return key.rfind(p, 0) == 0; });
}

int64_t positive(const ConfigReader& r, const std::string& key, int64_t fallback) {
  int64_t v = r.integer(key, fallback);
  if (v <= 0) r.fail(key, "is " + std::to_string(v) + ", expected a positive integer");
  return v;
}

std::vector<double> max_pos(const ConfigReader& r, const std::string& key, std::vector<double> fallback) {
  std::vector<double> v = r.has(key) ? r.numbers(key) : std::move(fallback);
  for (double x : v)
    if (!(x > 0)) r.fail(key, "has a non-positive entry");
  return v;
}

}  // namespace

TransformerConfig TransformerConfig::parse(const json& transformer) {
  ConfigReader r(transformer, "transformer");
  for (const auto& [key, value] : transformer.items())
    if (!known_key(key)) r.fail(key, "is not a transformer option this engine knows");
  for (const auto& [key, expected] : asserted_keys()) {
    if (!r.has(key)) r.fail(key, "is missing (the reference requires " + expected.dump() + ")");
    r.require_equal(key, expected);
  }
  if (r.has("num_vector_embeds")) r.fail("num_vector_embeds", "must be null or absent");

  TransformerConfig c;
  c.num_layers = positive(r, "num_layers", c.num_layers);
  c.video_heads = positive(r, "num_attention_heads", -1);
  c.video_head_dim = positive(r, "attention_head_dim", -1);
  c.audio_heads = positive(r, "audio_num_attention_heads", -1);
  c.audio_head_dim = positive(r, "audio_attention_head_dim", -1);
  if (c.video_heads != c.audio_heads)
    r.fail("audio_num_attention_heads", "must equal num_attention_heads (the reference asserts it)");
  if (c.video_head_dim % 2 || c.audio_head_dim % 2) r.fail("attention_head_dim", "must be even for RoPE");
  c.video_in_channels = positive(r, "in_channels", c.video_in_channels);
  c.video_out_channels = positive(r, "out_channels", c.video_out_channels);
  c.audio_in_channels = positive(r, "audio_in_channels", c.audio_in_channels);
  c.audio_out_channels = positive(r, "audio_out_channels", c.audio_out_channels);
  c.video_context_dim = positive(r, "cross_attention_dim", c.video_context_dim);
  c.audio_context_dim = positive(r, "audio_cross_attention_dim", c.audio_context_dim);
  if (c.video_context_dim != c.video_dim())
    r.fail("cross_attention_dim", "must equal num_attention_heads * attention_head_dim");
  if (c.audio_context_dim != c.audio_dim())
    r.fail("audio_cross_attention_dim", "must equal audio_num_attention_heads * audio_attention_head_dim");
  c.caption_projection = !r.boolean("caption_proj_before_connector", false);
  if (c.caption_projection) c.caption_channels = positive(r, "caption_channels", -1);
  c.norm_eps = r.number("norm_eps", c.norm_eps);
  if (!(c.norm_eps > 0)) r.fail("norm_eps", "must be positive");
  c.rope_theta = r.number("positional_embedding_theta", c.rope_theta);
  if (!(c.rope_theta > 1)) r.fail("positional_embedding_theta", "must be greater than 1");
  c.video_max_pos = max_pos(r, "positional_embedding_max_pos", c.video_max_pos);
  if (c.video_max_pos.size() != 3) r.fail("positional_embedding_max_pos", "must have 3 entries (t, y, x)");
  c.audio_max_pos = max_pos(r, "audio_positional_embedding_max_pos", c.audio_max_pos);
  if (c.audio_max_pos.size() != 1) r.fail("audio_positional_embedding_max_pos", "must have 1 entry (t)");
  c.timestep_scale_multiplier = r.number("timestep_scale_multiplier", c.timestep_scale_multiplier);
  if (c.timestep_scale_multiplier == 0) r.fail("timestep_scale_multiplier", "must not be 0");
  c.av_ca_timestep_scale_multiplier =
      r.number("av_ca_timestep_scale_multiplier", c.av_ca_timestep_scale_multiplier);
  c.rope_layout = r.choice("rope_type", {"split", "interleaved"}, "split") == "split"
                      ? RopeLayout::Split
                      : RopeLayout::Interleaved;
  c.rope_float64_grid = r.choice("frequencies_precision", {"float32", "float64"}, "float32") == "float64";
  c.gated_attention = r.boolean("apply_gated_attention", false);
  c.cross_attention_adaln = r.boolean("cross_attention_adaln", false);
  c.prompt_adaln = r.boolean("use_prompt_adaln_single", true);
  c.video_ff_bias = r.boolean("ff_bias", true);
  c.audio_ff_bias = r.boolean("audio_ff_bias", true);
  c.keyframe_embedding = r.boolean("use_keyframes_abs_pos_embedding", false);
  return c;
}

}  // namespace ltx2
