// The tiny model set (see tiny_model.h): its configs, the synthesis of each file's tensors by the
// models' own loaders, the writing and the cache folder.
#include "pipeline/tiny_model.h"

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "io/configs/audio_vae_config.h"
#include "io/configs/gemma_config.h"
#include "io/configs/text_projection_config.h"
#include "io/configs/transformer_config.h"
#include "io/configs/upsampler_config.h"
#include "io/configs/video_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/text/embeddings_connector.h"
#include "models/text/feature_extractor.h"
#include "models/text/gemma3.h"
#include "models/transformer/weights.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/encoder.h"
#include "models/vocoder/vocoder.h"
#include "pipeline/tiny_tokenizer.h"

namespace ltx2::pipeline {

namespace fs = std::filesystem;
using json = nlohmann::json;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

namespace {

constexpr uint64_t kSeed = 0x17C2'71A7ull;
constexpr int64_t kLoraRank = 4;
constexpr float kLoraUpScale = 0.1f;  // keeps the fused LoRA a small change of each weight

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

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Stored as the real checkpoints store them: bf16, sorted by name.
NamedTensors as_stored(NamedTensors tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [name, t] : tensors) t = t.to(DType::BF16);
  return tensors;
}

NamedTensors synthesize_checkpoint(const json& config) {
  auto s = std::make_shared<WeightSynthesizer>(kSeed);
  const json& transformer = config.at("transformer");
  const TransformerConfig dit = TransformerConfig::parse(transformer);
  models::transformer::TransformerWeights::load(WeightView(s, "model.diffusion_model.", "transformer"), dit);

  const TextProjectionConfig text = parse_text_projection_config(transformer);
  LTX2_CHECK(text.extractor == FeatureExtractorKind::V1,
             "tiny model: the checkpoint config must be 19B-style");
  // The extractor reads Gemma's depth off its projection's width, so that one is made first.
  const GemmaConfig gemma = parse_gemma_config(tiny_gemma_config());
  s->make("text_embedding_projection.aggregate_embed.weight",
          {text.caption_channels, text.caption_channels * gemma.num_hidden_states()});
  FeatureExtractor(text, WeightView(s, "text_embedding_projection.", "text projection"));
  EmbeddingsConnector(text.video,
                      WeightView(s, "model.diffusion_model.video_embeddings_connector.", "video connector"));
  EmbeddingsConnector(text.audio,
                      WeightView(s, "model.diffusion_model.audio_embeddings_connector.", "audio connector"));

  const WeightView video_stats(s, "vae.per_channel_statistics.", "video VAE statistics");
  video_vae::VideoDecoder(VideoDecoderConfig::from_metadata(config),
                          WeightView(s, "vae.decoder.", "video VAE decoder"), video_stats);
  video_vae::VideoEncoder(VideoEncoderConfig::from_metadata(config),
                          WeightView(s, "vae.encoder.", "video VAE encoder"), video_stats);
  audio_vae::AudioDecoder(parse_audio_vae_decoder_config(config.at("audio_vae")),
                          WeightView(s, "audio_vae.decoder.", "audio VAE decoder"),
                          WeightView(s, "audio_vae.per_channel_statistics.", "audio VAE statistics"));
  vocoder::Vocoder(parse_vocoder_config(config.at("vocoder")), WeightView(s, "vocoder.", "vocoder"));
  return s->tensors();
}

// A rank-kLoraRank pair for every linear weight of the transformer blocks.
NamedTensors synthesize_lora(const NamedTensors& checkpoint) {
  const std::string dit = "model.diffusion_model.", blocks = dit + "transformer_blocks.", weight = ".weight";
  WeightSynthesizer s(kSeed + 1);
  NamedTensors out;
  for (const auto& [name, t] : checkpoint) {
    if (!starts_with(name, blocks) || !ends_with(name, weight) || t.dim() != 2) continue;
    const std::string module =
        "diffusion_model." + name.substr(dit.size(), name.size() - dit.size() - weight.size());
    out.emplace_back(module + ".lora_A.weight", s.make(module + ".lora_A.weight", {kLoraRank, t.size(1)}));
    Tensor up = s.make(module + ".lora_B.weight", {t.size(0), kLoraRank}).clone();
    float* p = up.data<float>();
    for (int64_t i = 0; i < up.numel(); ++i) p[i] *= kLoraUpScale;
    out.emplace_back(module + ".lora_B.weight", up);
  }
  return out;
}

NamedTensors synthesize_upsampler() {
  auto s = std::make_shared<WeightSynthesizer>(kSeed + 2);
  upsampler::LatentUpsampler(UpsamplerConfig::from_metadata(tiny_upsampler_config()),
                             WeightView(s, "", "latent upsampler"));
  return s->tensors();
}

NamedTensors synthesize_gemma() {
  auto s = std::make_shared<WeightSynthesizer>(kSeed + 3);
  Gemma3TextModel(parse_gemma_config(tiny_gemma_config()),
                  WeightView(s, "language_model.model.", "gemma text model"));
  return s->tensors();
}

void write_text_file(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    LTX2_CHECK(f.good(), "{}: cannot open for writing", tmp.string());
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    LTX2_CHECK(f.good(), "{}: write failed", tmp.string());
  }
  fs::rename(tmp, path);
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
  const NamedTensors checkpoint = synthesize_checkpoint(config);
  write_safetensors(paths.checkpoint, as_stored(checkpoint), {{"config", config.dump()}});
  write_safetensors(paths.lora, as_stored(synthesize_lora(checkpoint)));
  write_safetensors(paths.upsampler, as_stored(synthesize_upsampler()),
                    {{"config", tiny_upsampler_config().dump()}});
  write_safetensors((fs::path(paths.gemma) / "model.safetensors").string(), as_stored(synthesize_gemma()),
                    {{"format", "pt"}});
  write_text_file(fs::path(paths.gemma) / "config.json", tiny_gemma_config().dump(2) + "\n");
  write_text_file(fs::path(paths.gemma) / "tokenizer.model", train_tiny_tokenizer());
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
    spdlog::debug("writing the tiny model set to {}", final_dir.string());
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
  if (paths.spatial_upsampler.empty()) paths.spatial_upsampler = tiny.upsampler;
  if (kind == PipelineKind::TwoStage && paths.distilled_lora.path.empty())
    paths.distilled_lora = {tiny.lora, 1.0};
  return true;
}

}  // namespace ltx2::pipeline
