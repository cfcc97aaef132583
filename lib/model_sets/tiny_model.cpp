// The tiny model set (see tiny_model.h): its configs, the synthesis of each file's tensors by the
// models' own loaders, the writing and the cache folder.
#include "model_sets/tiny_model.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "io/configs/gemma_config.h"
#include "io/safetensors.h"
#include "model_sets/synthesized_models.h"
#include "model_sets/tiny_tokenizer.h"

namespace ltx2::model_sets {

namespace fs = std::filesystem;
using json = nlohmann::json;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

namespace {

constexpr uint64_t kSeed = 0x17C2'71A7ull;
constexpr int64_t kLoraRank = 4;

// LTX-2 (19B layout): 12 heads everywhere so that 1, 2, 3 and 4 ranks split them evenly; the real
// 128 latent channels (video) and 8 x 16 (audio; the audio VAE's `ch` must be 8 x 16 too, as it sizes
// the statistics); connector width = Gemma width = caption_channels.
constexpr const char* kCheckpointConfig = R"({
 "transformer": {"_class_name": "AVTransformer3DModel", "attention_type": "default", "norm_num_groups": 32,
  "dropout": 0.0, "attention_bias": true, "num_vector_embeds": null, "activation_fn": "gelu-approximate",
  "num_embeds_ada_norm": 1000, "use_linear_projection": false, "only_cross_attention": false,
  "cross_attention_norm": true, "double_self_attention": false, "upcast_attention": false,
  "standardization_norm": "rms_norm", "norm_elementwise_affine": false, "qk_norm": "rms_norm",
  "positional_embedding_type": "rope", "use_audio_video_cross_attention": true, "share_ff": false,
  "av_cross_ada_norm": true, "use_middle_indices_grid": true, "num_layers": 2, "num_attention_heads": 12,
  "attention_head_dim": 8, "in_channels": 128, "out_channels": 128, "cross_attention_dim": 96,
  "caption_channels": 96, "norm_eps": 1e-06, "positional_embedding_theta": 10000.0,
  "positional_embedding_max_pos": [20, 2048, 2048], "timestep_scale_multiplier": 1000,
  "av_ca_timestep_scale_multiplier": 1000.0, "causal_temporal_positioning": true,
  "audio_num_attention_heads": 12, "audio_attention_head_dim": 4, "audio_in_channels": 128,
  "audio_out_channels": 128, "audio_cross_attention_dim": 48, "audio_positional_embedding_max_pos": [20],
  "use_embeddings_connector": true, "connector_positional_embedding_max_pos": [4096],
  "connector_num_learnable_registers": 128, "connector_num_attention_heads": 12,
  "connector_attention_head_dim": 8, "connector_num_layers": 1, "rope_type": "split",
  "frequencies_precision": "float64"},
 "vae": {"_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3, "out_channels": 3,
  "latent_channels": 128,
  "encoder_blocks": [["compress_all_res", {"multiplier": 1}], ["compress_all_res", {"multiplier": 1}],
                     ["compress_all_res", {"multiplier": 1}]],
  "decoder_blocks": [["res_x", {"num_layers": 1, "inject_noise": false}], ["compress_all", {"multiplier": 1}],
                     ["res_x", {"num_layers": 1, "inject_noise": false}],
                     ["compress_all", {"residual": true, "multiplier": 2}],
                     ["res_x", {"num_layers": 1, "inject_noise": false}], ["compress_space", {"multiplier": 2}],
                     ["res_x", {"num_layers": 1, "inject_noise": false}], ["compress_time", {"multiplier": 2}],
                     ["res_x", {"num_layers": 1, "inject_noise": false}]],
  "scaling_factor": 1.0, "norm_layer": "pixel_norm", "patch_size": 4, "latent_log_var": "uniform",
  "use_quant_conv": false, "causal_decoder": false, "timestep_conditioning": false,
  "normalize_latent_channels": false, "encoder_spatial_padding_mode": "zeros",
  "decoder_spatial_padding_mode": "reflect", "decoder_base_channels": 4},
 "audio_vae": {"model": {"params": {"ddconfig": {"double_z": true, "mel_bins": 64, "z_channels": 8,
   "resolution": 256, "downsample_time": false, "in_channels": 2, "out_ch": 2, "ch": 128, "ch_mult": [1, 1, 1],
   "num_res_blocks": 0, "attn_resolutions": [], "dropout": 0.0, "mid_block_add_attention": false,
   "norm_type": "pixel", "causality_axis": "height"}, "sampling_rate": 16000}},
  "preprocessing": {"stft": {"filter_length": 1024, "hop_length": 160, "win_length": 1024, "causal": true},
   "mel": {"n_mel_channels": 64, "mel_fmin": 0, "mel_fmax": 8000}}},
 "vocoder": {"resblock_kernel_sizes": [3, 7, 11], "upsample_rates": [6, 5, 2, 2, 2],
  "upsample_kernel_sizes": [16, 15, 8, 4, 4], "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
  "upsample_initial_channel": 64, "resblock": "1", "stereo": true, "output_sampling_rate": 24000}
})";

constexpr const char* kUpsamplerConfig = R"({"_class_name": "LatentUpsampler", "in_channels": 128,
 "mid_channels": 32, "num_blocks_per_stage": 1, "dims": 3, "spatial_upsample": true,
 "temporal_upsample": false, "spatial_scale": 2.0, "rational_resampler": false})";

constexpr const char* kGemmaConfig = R"({"architectures": ["Gemma3ForConditionalGeneration"],
 "model_type": "gemma3", "boi_token_index": 6, "eoi_token_index": 7, "image_token_index": 8,
 "eos_token_id": [1, 5], "mm_tokens_per_image": 4,
 "text_config": {"model_type": "gemma3_text", "vocab_size": 512, "hidden_size": 96,
  "intermediate_size": 192, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
  "head_dim": 16, "query_pre_attn_scalar": 16, "hidden_activation": "gelu_pytorch_tanh",
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
  "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 16, "sliding_window_pattern": 3,
  "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 2048, "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "final_logit_softcapping": null, "pad_token_id": 0, "bos_token_id": 2,
  "eos_token_id": 1}})";

// Stored as the real checkpoints store them: bf16, sorted by name.
NamedTensors as_stored(NamedTensors tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, t] : tensors) t = t.to(DType::BF16);
  return tensors;
}

NamedTensors synthesize_tiny_checkpoint(const json& config) {
  auto s = std::make_shared<WeightSynthesizer>(kSeed);
  synthesize_checkpoint(s, config, parse_gemma_config(tiny_gemma_config()));
  return s->tensors();
}

// A rank-kLoraRank pair for every linear layer of the transformer blocks.
NamedTensors synthesize_lora(const NamedTensors& checkpoint) {
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto& [name, t] : checkpoint) shapes.emplace_back(name, t.shape());
  WeightSynthesizer s(kSeed + 1);
  NamedTensors out;
  for (const LoraTarget& target : lora_targets(shapes, kLoraRank)) {
    out.emplace_back(target.down, s.make(target.down, target.down_shape));
    Tensor up = s.make(target.up, target.up_shape).clone();
    float* p = up.data<float>();
    for (int64_t i = 0; i < up.numel(); ++i) p[i] *= kLoraUpScale;
    out.emplace_back(target.up, up);
  }
  return out;
}

NamedTensors synthesize_tiny_upsampler() {
  auto s = std::make_shared<WeightSynthesizer>(kSeed + 2);
  synthesize_upsampler(s, tiny_upsampler_config());
  return s->tensors();
}

NamedTensors synthesize_tiny_gemma() {
  auto s = std::make_shared<WeightSynthesizer>(kSeed + 3);
  synthesize_gemma_text(s, parse_gemma_config(tiny_gemma_config()));
  return s->tensors();
}

}  // namespace

TinyModelPaths tiny_model_paths(const std::string& dir) {
  const fs::path d(dir);
  return {dir, (d / "checkpoint.safetensors").string(), (d / "spatial_upsampler.safetensors").string(),
          (d / "distilled_lora.safetensors").string(), (d / "gemma").string()};
}

json tiny_checkpoint_config() {
  return json::parse(kCheckpointConfig);
}
json tiny_upsampler_config() {
  return json::parse(kUpsamplerConfig);
}
json tiny_gemma_config() {
  return json::parse(kGemmaConfig);
}

TinyModelPaths write_tiny_model_set(const std::string& dir) {
  const TinyModelPaths paths = tiny_model_paths(dir);
  fs::create_directories(paths.gemma);
  const json config = tiny_checkpoint_config();
  const NamedTensors checkpoint = synthesize_tiny_checkpoint(config);
  write_safetensors(paths.checkpoint, as_stored(checkpoint), {{"config", config.dump()}});
  write_safetensors(paths.lora, as_stored(synthesize_lora(checkpoint)));
  write_safetensors(paths.upsampler, as_stored(synthesize_tiny_upsampler()),
                    {{"config", tiny_upsampler_config().dump()}});
  write_safetensors((fs::path(paths.gemma) / "model.safetensors").string(),
                    as_stored(synthesize_tiny_gemma()), {{"format", "pt"}});
  write_file_atomically((fs::path(paths.gemma) / "config.json").string(), tiny_gemma_config().dump(2) + "\n");
  write_file_atomically((fs::path(paths.gemma) / "tokenizer.model").string(), train_tiny_tokenizer());
  return paths;
}

std::string ltx2_cache_dir() {
  if (const char* d = std::getenv("LTX2_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "ltx2").string();
  const char* home = std::getenv("HOME");
  LTX2_CHECK(home && *home, "no cache folder for the tiny model: set LTX2_CACHE_DIR (HOME is not set)");
  return (fs::path(home) / ".cache" / "ltx2").string();
}

TinyModelPaths ensure_tiny_model_set() {
  const fs::path root = ltx2_cache_dir(), final_dir = root / kTinyModelVersion;
  if (fs::is_directory(final_dir)) return tiny_model_paths(final_dir.string());
  fs::create_directories(root);
  std::string pattern = (root / (std::string(kTinyModelVersion) + ".tmp.XXXXXX")).string();
  LTX2_CHECK(mkdtemp(pattern.data()) != nullptr, "{}: cannot create a temporary folder: {}", root.string(),
             std::strerror(errno));
  const fs::path tmp = pattern;
  std::error_code ignored;
  try {
    log_debug("writing the tiny model set to {}", final_dir.string());
    write_tiny_model_set(tmp.string());
    fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  } catch (...) {
    fs::remove_all(tmp, ignored);
    throw;
  }
  // rename() of a folder onto an existing non-empty one fails: then another process won the race.
  std::error_code ec;
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    fs::remove_all(tmp, ignored);
    LTX2_CHECK(fs::is_directory(final_dir), "{}: cannot move the tiny model set into place: {}",
               final_dir.string(), ec.message());
  }
  return tiny_model_paths(final_dir.string());
}

bool use_tiny_model_when_unset(ModelPaths& paths, PipelineKind kind) {
  if (!paths.checkpoint.empty() || paths.split()) return false;
  const TinyModelPaths tiny = ensure_tiny_model_set();
  paths.checkpoint = tiny.checkpoint;
  if (paths.gemma_root.empty()) paths.gemma_root = tiny.gemma;
  if (pipeline_traits(kind).refines && paths.spatial_upsampler.empty())
    paths.spatial_upsampler = tiny.upsampler;
  if (pipeline_traits(kind).distilled_lora && paths.distilled_loras.empty())
    paths.distilled_loras = {{tiny.lora, 1.0}};
  return true;
}

}  // namespace ltx2::model_sets
