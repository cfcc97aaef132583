// The full-size random model sets (see random_model.h): their configs, the plan of every file's
// tensors (learnt from the loaders on a one-layer config, then repeated per layer) and the
// streamed writing.
#include "model_sets/random_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/error.h"
#include "io/configs/gemma_config.h"
#include "io/layout.h"
#include "model_sets/synthesized_models.h"
#include "model_sets/tiny_tokenizer.h"

namespace ltx2::model_sets {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The transformer keys both releases share (transformer.md §2; the golden fixtures' configs carry
// the same keys at tiny sizes). 19B: the caption projection in the transformer, 2-layer 30x128
// connectors (3840 = Gemma's width).
constexpr const char* kTransformer19b = R"({"_class_name": "AVTransformer3DModel",
 "attention_type": "default", "norm_num_groups": 32, "dropout": 0.0, "attention_bias": true,
 "num_vector_embeds": null, "activation_fn": "gelu-approximate", "num_embeds_ada_norm": 1000,
 "use_linear_projection": false, "only_cross_attention": false, "cross_attention_norm": true,
 "double_self_attention": false, "upcast_attention": false, "standardization_norm": "rms_norm",
 "norm_elementwise_affine": false, "qk_norm": "rms_norm", "positional_embedding_type": "rope",
 "use_audio_video_cross_attention": true, "share_ff": false, "av_cross_ada_norm": true,
 "use_middle_indices_grid": true, "num_layers": 48, "num_attention_heads": 32, "attention_head_dim": 128,
 "in_channels": 128, "out_channels": 128, "cross_attention_dim": 4096, "caption_channels": 3840,
 "norm_eps": 1e-06, "positional_embedding_theta": 10000.0, "positional_embedding_max_pos": [20, 2048, 2048],
 "timestep_scale_multiplier": 1000, "av_ca_timestep_scale_multiplier": 1000, "causal_temporal_positioning": true,
 "audio_num_attention_heads": 32, "audio_attention_head_dim": 64, "audio_in_channels": 128,
 "audio_out_channels": 128, "audio_cross_attention_dim": 2048, "audio_positional_embedding_max_pos": [20],
 "use_embeddings_connector": true, "connector_positional_embedding_max_pos": [4096],
 "connector_num_learnable_registers": 128, "connector_num_attention_heads": 30,
 "connector_attention_head_dim": 128, "connector_num_layers": 2, "rope_type": "split",
 "frequencies_precision": "float64"})";

// LTX-2.3 on top of the shared keys: gated attention, cross-attention AdaLN, the V2 feature
// extractor (caption projection before the connectors) and 8-layer gated connectors at the
// transformer's widths (video 32x128, audio 32x64).
constexpr const char* kTransformer22bChanges = R"({"av_ca_timestep_scale_multiplier": 1000.0,
 "connector_num_attention_heads": 32, "connector_attention_head_dim": 128, "connector_num_layers": 8,
 "audio_connector_num_attention_heads": 32, "audio_connector_attention_head_dim": 64,
 "connector_norm_output": true, "connector_learnable_registers_std": 1, "connector_apply_gated_attention": true,
 "apply_gated_attention": true, "cross_attention_adaln": true, "caption_proj_before_connector": true,
 "caption_projection_first_linear": false, "caption_projection_second_linear": false,
 "caption_proj_input_norm": false, "text_encoder_norm_type": "per_token_rms"})";

// vae-audio.md §3: the shared fields; the block lists and the padding differ by release.
constexpr const char* kVae = R"({"_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3,
 "out_channels": 3, "latent_channels": 128, "scaling_factor": 1.0, "norm_layer": "pixel_norm",
 "patch_size": 4, "latent_log_var": "uniform", "use_quant_conv": false, "causal_decoder": false,
 "timestep_conditioning": false, "normalize_latent_channels": false, "encoder_base_channels": 128,
 "decoder_base_channels": 128})";

// LTX-2.0: decoder reflect padding, spelt as the fixtures spell it (the reference reads neither key,
// and both resolve as written); encoder zeros.
constexpr const char* kVae19b = R"({"encoder_spatial_padding_mode": "zeros",
 "decoder_spatial_padding_mode": "reflect",
 "encoder_blocks": [["res_x", {"num_layers": 4}], ["compress_space_res", {"multiplier": 2}],
  ["res_x", {"num_layers": 6}], ["compress_time_res", {"multiplier": 2}], ["res_x", {"num_layers": 6}],
  ["compress_all_res", {"multiplier": 2}], ["res_x", {"num_layers": 2}], ["compress_all_res", {"multiplier": 2}],
  ["res_x", {"num_layers": 2}]],
 "decoder_blocks": [["res_x", {"num_layers": 5, "inject_noise": false}],
  ["compress_all", {"residual": true, "multiplier": 2}], ["res_x", {"num_layers": 5, "inject_noise": false}],
  ["compress_all", {"residual": true, "multiplier": 2}], ["res_x", {"num_layers": 5, "inject_noise": false}],
  ["compress_all", {"residual": true, "multiplier": 2}], ["res_x", {"num_layers": 5, "inject_noise": false}]]})";

constexpr const char* kVae22b = R"({"spatial_padding_mode": "zeros",
 "encoder_blocks": [["res_x", {"num_layers": 4}], ["compress_space_res", {"multiplier": 2}],
  ["res_x", {"num_layers": 6}], ["compress_time_res", {"multiplier": 2}], ["res_x", {"num_layers": 4}],
  ["compress_all_res", {"multiplier": 2}], ["res_x", {"num_layers": 2}], ["compress_all_res", {"multiplier": 1}],
  ["res_x", {"num_layers": 2}]],
 "decoder_blocks": [["res_x", {"num_layers": 4, "inject_noise": false}], ["compress_space", {"multiplier": 2}],
  ["res_x", {"num_layers": 6, "inject_noise": false}], ["compress_time", {"multiplier": 2}],
  ["res_x", {"num_layers": 4, "inject_noise": false}], ["compress_all", {"multiplier": 1}],
  ["res_x", {"num_layers": 2, "inject_noise": false}], ["compress_all", {"multiplier": 2}],
  ["res_x", {"num_layers": 2, "inject_noise": false}]]})";

// vae-audio.md §8.1: the same in both releases.
constexpr const char* kAudioVae = R"({"model": {"params": {"ddconfig": {"double_z": true, "mel_bins": 64,
 "z_channels": 8, "resolution": 256, "downsample_time": false, "in_channels": 2, "out_ch": 2, "ch": 128,
 "ch_mult": [1, 2, 4], "num_res_blocks": 2, "attn_resolutions": [], "dropout": 0.0,
 "mid_block_add_attention": false, "norm_type": "pixel", "causality_axis": "height"}, "sampling_rate": 16000}},
 "preprocessing": {"stft": {"filter_length": 1024, "hop_length": 160, "win_length": 1024, "causal": true},
  "mel": {"n_mel_channels": 64, "mel_fmin": 0, "mel_fmax": 8000}}})";

// vae-audio.md §9 (HiFi-GAN, 24 kHz) and §10 (BigVGAN-v2 at 16 kHz + bandwidth extension to 48 kHz).
constexpr const char* kVocoder19b =
    R"({"resblock_kernel_sizes": [3, 7, 11], "upsample_rates": [6, 5, 2, 2, 2],
 "upsample_kernel_sizes": [16, 15, 8, 4, 4], "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
 "upsample_initial_channel": 1024, "resblock": "1", "stereo": true, "output_sampling_rate": 24000})";

constexpr const char* kVocoder22b = R"({"vocoder": {"upsample_initial_channel": 1536, "resblock": "AMP1",
  "upsample_rates": [5, 2, 2, 2, 2, 2], "resblock_kernel_sizes": [3, 7, 11],
  "upsample_kernel_sizes": [11, 4, 4, 4, 4, 4], "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
  "stereo": true, "use_tanh_at_final": false, "activation": "snakebeta", "use_bias_at_final": false},
 "bwe": {"upsample_initial_channel": 512, "resblock": "AMP1", "upsample_rates": [6, 5, 2, 2, 2],
  "resblock_kernel_sizes": [3, 7, 11], "upsample_kernel_sizes": [12, 11, 4, 4, 4],
  "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]], "stereo": true, "use_tanh_at_final": false,
  "activation": "snakebeta", "use_bias_at_final": false, "apply_final_activation": false,
  "input_sampling_rate": 16000, "output_sampling_rate": 48000, "hop_length": 80, "n_fft": 512,
  "win_size": 512, "num_mels": 64}})";

// vae-audio.md §7: the x2 release's mid width 1024, 4 + 4 ResBlocks.
constexpr const char* kUpsampler = R"({"_class_name": "LatentUpsampler", "in_channels": 128,
 "mid_channels": 1024, "num_blocks_per_stage": 4, "dims": 3, "spatial_upsample": true,
 "temporal_upsample": false, "spatial_scale": 2.0, "rational_resampler": false})";

// google/gemma-3-12b-it-qat-q4_0-unquantized's config.json, with the text config's keys written out
// (Hugging Face's defaults for the ones the file leaves out).
constexpr const char* kGemma = R"({"architectures": ["Gemma3ForConditionalGeneration"],
 "boi_token_index": 255999, "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
 "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
 "text_config": {"attention_bias": false, "attention_dropout": 0.0, "attn_logit_softcapping": null,
  "cache_implementation": "hybrid", "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3840, "initializer_range": 0.02,
  "intermediate_size": 15360, "max_position_embeddings": 131072, "model_type": "gemma3_text",
  "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8, "query_pre_attn_scalar": 256,
  "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
  "rope_theta": 1000000.0, "sliding_window": 1024, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
  "use_cache": true, "vocab_size": 262208},
 "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
 "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
  "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14,
  "vision_use_head": false}})";

constexpr const char* kGemmaFolder = "gemma-3-12b-it-qat-q4_0-unquantized";
constexpr const char* kGemmaIndex = "model.safetensors.index.json";
// Hugging Face's default max_shard_size ("5GB").
constexpr uint64_t kGemmaShardBytes = 5'000'000'000ull;
constexpr const char* kBlocks = "model.diffusion_model.transformer_blocks.";
constexpr const char* kGemmaLayers = "language_model.model.layers.";

bool is_22b(const std::string& model) {
  LTX2_CHECK(model == "19b" || model == "22b", "model must be 19b or 22b, got '{}'", model);
  return model == "22b";
}

void check_layers(int64_t layers) {
  LTX2_CHECK(layers >= 1 && layers <= kFullSizeLayers, "layers must be 1 to {}, got {}", kFullSizeLayers,
             layers);
}

struct Names {
  std::string monolith, transformer, text_encoder, video_vae, audio_vae, upsampler, lora;
};

Names file_names(const std::string& model) {
  const std::string release = is_22b(model) ? "ltx-2.3" : "ltx-2", sized = release + "-" + model;
  return {sized + "-distilled.safetensors",
          "diffusion_models/" + sized + "-distilled-transformer-bf16.safetensors",
          "text_encoders/" + sized + "-text-projection-bf16.safetensors",
          "vae/" + release + "-video-vae-bf16.safetensors",
          "vae/" + release + "-audio-vae-bf16.safetensors",
          release + "-spatial-upscaler-x2-1.0.safetensors",
          sized + "-distilled-lora-" + std::to_string(kDistilledLoraRank) + ".safetensors"};
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

using Shapes = std::vector<std::pair<std::string, Shape>>;

Shapes sorted_shapes(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  Shapes out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, t.shape());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// A one-layer run's tensors with every name under `prefix` + "0." repeated for layers 0..n-1,
// sorted by name as the writers store them.
Shapes repeat_layers(const std::vector<std::pair<std::string, Tensor>>& one_layer, const std::string& prefix,
                     int64_t n) {
  std::vector<std::pair<std::string, Tensor>> out;
  const std::string first = prefix + "0.";
  for (const auto& [name, t] : one_layer) {
    LTX2_CHECK(!starts_with(name, prefix + "1."), "random model: the one-layer plan has a second layer");
    if (!starts_with(name, first)) {
      out.emplace_back(name, t);
      continue;
    }
    for (int64_t i = 0; i < n; ++i)
      out.emplace_back(prefix + std::to_string(i) + "." + name.substr(first.size()), t);
  }
  return sorted_shapes(out);
}

// Every tensor of the checkpoint with `o.layers` blocks and a text projection for `o.layers` Gemma
// layers.
Shapes checkpoint_shapes(const RandomModelOptions& o) {
  auto synth = std::make_shared<WeightSynthesizer>(o.seed, /*values=*/false);
  synthesize_checkpoint(synth, full_size_checkpoint_config(o.model, 1),
                        parse_gemma_config(full_size_gemma_config(o.layers)));
  return repeat_layers(synth->tensors(), kBlocks, o.layers);
}

RandomTensor random_tensor(const std::string& stored_name, const std::string& value_name, const Shape& shape,
                           uint64_t seed, float gain = 1.f) {
  return {{stored_name, DType::BF16, shape}, SynthesizedValues(seed, value_name, shape), gain};
}

RandomModelFile safetensors_file(std::string path, const Shapes& shapes, uint64_t seed,
                                 std::map<std::string, std::string> metadata) {
  RandomModelFile f{std::move(path), {}, std::move(metadata), {}};
  for (const auto& [name, shape] : shapes) f.tensors.push_back(random_tensor(name, name, shape, seed));
  return f;
}

// The monolith's tensors, or the split files' (the video VAE's keys without "vae."; the values stay
// those of the monolith names, so that both layouts hold the same model).
void plan_checkpoint(const RandomModelOptions& o, const Names& names, const Shapes& shapes,
                     RandomModelSet* set) {
  const std::map<std::string, std::string> metadata = {
      {"config", full_size_checkpoint_config(o.model, o.layers).dump()},
      {"model_version", full_size_model_version(o.model)}};
  if (o.layout == RandomLayout::Monolith) {
    set->files.push_back(safetensors_file(names.monolith, shapes, o.seed, metadata));
    set->paths.checkpoint = names.monolith;
    return;
  }
  RandomModelFile transformer{names.transformer, {}, metadata, {}},
      text{names.text_encoder, {}, metadata, {}}, video{names.video_vae, {}, metadata, {}},
      audio{names.audio_vae, {}, metadata, {}};
  for (const auto& [name, shape] : shapes) {
    switch (classify_key(name)) {
      case Component::Transformer:
        transformer.tensors.push_back(random_tensor(name, name, shape, o.seed));
        break;
      case Component::TextConnector: text.tensors.push_back(random_tensor(name, name, shape, o.seed)); break;
      case Component::VideoDecoder:
      case Component::VideoEncoder:
      case Component::VideoStats:
        video.tensors.push_back(random_tensor(name.substr(std::string("vae.").size()), name, shape, o.seed));
        break;
      case Component::AudioDecoder:
      case Component::AudioStats:
      case Component::Vocoder: audio.tensors.push_back(random_tensor(name, name, shape, o.seed)); break;
      default: LTX2_FAIL("random model: tensor '{}' belongs to no split file", name);
    }
  }
  std::sort(video.tensors.begin(), video.tensors.end(),
            [](const RandomTensor& a, const RandomTensor& b) { return a.spec.name < b.spec.name; });
  for (RandomModelFile* f : {&transformer, &text, &video, &audio}) set->files.push_back(std::move(*f));
  set->paths.transformer = names.transformer;
  set->paths.text_encoder = names.text_encoder;
  set->paths.video_vae = names.video_vae;
  set->paths.audio_vae = names.audio_vae;
}

// A rank-384 pair for every linear of the transformer's blocks (of the N-layer checkpoint).
void plan_lora(const RandomModelOptions& o, const Names& names, const Shapes& checkpoint,
               RandomModelSet* set) {
  RandomModelFile f{names.lora, {}, {}, {}};
  for (const LoraTarget& t : lora_targets(checkpoint, kDistilledLoraRank)) {
    f.tensors.push_back(random_tensor(t.down, t.down, t.down_shape, o.seed + 1));
    f.tensors.push_back(random_tensor(t.up, t.up, t.up_shape, o.seed + 1, kLoraUpScale));
  }
  std::sort(f.tensors.begin(), f.tensors.end(),
            [](const RandomTensor& a, const RandomTensor& b) { return a.spec.name < b.spec.name; });
  set->files.push_back(std::move(f));
  set->paths.distilled_loras = {{names.lora, 1.0}};
}

void plan_upsampler(const RandomModelOptions& o, const Names& names, RandomModelSet* set) {
  auto synth = std::make_shared<WeightSynthesizer>(o.seed + 2, /*values=*/false);
  synthesize_upsampler(synth, full_size_upsampler_config());
  set->files.push_back(safetensors_file(names.upsampler, sorted_shapes(synth->tensors()), o.seed + 2,
                                        {{"config", full_size_upsampler_config().dump()}}));
  set->paths.spatial_upsampler = names.upsampler;
}

// Shards of at most 5 GB in name order (as Hugging Face's save_pretrained fills them), then the
// index, config.json and tokenizer.model.
void plan_gemma(const RandomModelOptions& o, RandomModelSet* set) {
  const json config = full_size_gemma_config(o.layers);
  auto synth = std::make_shared<WeightSynthesizer>(o.seed + 3, /*values=*/false);
  synthesize_gemma_text(synth, parse_gemma_config(full_size_gemma_config(1)));
  const Shapes shapes = repeat_layers(synth->tensors(), kGemmaLayers, o.layers);
  std::vector<Shapes> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const auto& [name, shape] : shapes) {
    const uint64_t bytes = TensorSpec{name, DType::BF16, shape}.nbytes();
    if (in_shard > 0 && in_shard + bytes > kGemmaShardBytes) shards.emplace_back(), in_shard = 0;
    shards.back().emplace_back(name, shape);
    in_shard += bytes;
    total += bytes;
  }
  const fs::path folder = kGemmaFolder;
  json weight_map = json::object();
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string shard = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
    for (const auto& [name, shape] : shards[k]) weight_map[name] = shard;
    set->files.push_back(
        safetensors_file((folder / shard).string(), shards[k], o.seed + 3, {{"format", "pt"}}));
  }
  const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  set->files.push_back({(folder / kGemmaIndex).string(), {}, {}, index.dump(2) + "\n"});
  set->files.push_back({(folder / "config.json").string(), {}, {}, config.dump(2) + "\n"});
  set->files.push_back({(folder / "tokenizer.model").string(), {}, {}, train_tiny_tokenizer()});
  set->paths.gemma_root = folder.string();
}

// Removes model-0000K-of-0000N.safetensors files of `folder` that `set` does not write (an earlier
// set's shards), so that the folder holds one model.
void remove_stale_shards(const fs::path& dir, const fs::path& folder, const RandomModelSet& set) {
  std::set<std::string> ours;
  for (const RandomModelFile& f : set.files) ours.insert((dir / f.path).lexically_normal().string());
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dir / folder)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, shard) && !ours.count(entry.path().lexically_normal().string()))
      fs::remove(entry.path());
  }
}

// Refuses to start a set that cannot fit: the peak, in writing order, of what the finished files
// add (each replaces its namesake) plus the file being written, whose namesake still exists then.
void check_space(const fs::path& root, const RandomModelSet& set) {
  fs::path existing = fs::absolute(root);
  while (!fs::exists(existing) && existing.has_relative_path()) existing = existing.parent_path();
  uint64_t peak = 0;
  int64_t added = 0;
  for (const RandomModelFile& f : set.files) {
    std::error_code ec;
    const uint64_t old = fs::is_regular_file(root / f.path, ec) ? fs::file_size(root / f.path, ec) : 0;
    const uint64_t now = f.bytes();
    peak = std::max<uint64_t>(peak,
                              static_cast<uint64_t>(std::max<int64_t>(0, added + static_cast<int64_t>(now))));
    added += static_cast<int64_t>(now) - static_cast<int64_t>(old);
  }
  const uint64_t available = fs::space(existing).available;
  LTX2_CHECK(peak <= available, "{}: the set needs {:.2f} GB more and {:.2f} GB are free", root.string(),
             peak / 1e9, available / 1e9);
}

std::string under(const fs::path& dir, const std::string& relative) {
  return relative.empty() ? "" : (dir / relative).string();
}

}  // namespace

json full_size_checkpoint_config(const std::string& model, int64_t layers) {
  check_layers(layers);
  const bool v23 = is_22b(model);
  json transformer = json::parse(kTransformer19b);
  if (v23) transformer.update(json::parse(kTransformer22bChanges));
  transformer["num_layers"] = layers;
  json vae = json::parse(kVae);
  vae.update(json::parse(v23 ? kVae22b : kVae19b));
  return {{"transformer", transformer},
          {"vae", vae},
          {"audio_vae", json::parse(kAudioVae)},
          {"vocoder", json::parse(v23 ? kVocoder22b : kVocoder19b)}};
}

std::string full_size_model_version(const std::string& model) {
  return is_22b(model) ? "2.3.0" : "2.0.0";
}

json full_size_upsampler_config() {
  return json::parse(kUpsampler);
}

json full_size_gemma_config(int64_t layers) {
  check_layers(layers);
  json config = json::parse(kGemma);
  config["text_config"]["num_hidden_layers"] = layers;
  return config;
}

uint64_t RandomModelFile::bytes() const {
  if (!is_safetensors()) return text.size();
  std::vector<TensorSpec> specs;
  for (const RandomTensor& t : tensors) specs.push_back(t.spec);
  return safetensors_file_size(specs, metadata);
}

RandomModelSet plan_random_model_set(const RandomModelOptions& o) {
  is_22b(o.model);
  check_layers(o.layers);
  const Names names = file_names(o.model);
  RandomModelSet set;
  const Shapes checkpoint = o.checkpoint || o.lora ? checkpoint_shapes(o) : Shapes{};
  if (o.checkpoint) plan_checkpoint(o, names, checkpoint, &set);
  if (o.upsampler) plan_upsampler(o, names, &set);
  if (o.lora) plan_lora(o, names, checkpoint, &set);
  if (o.gemma) plan_gemma(o, &set);
  return set;
}

ModelPaths write_random_model_set(const std::string& dir, const RandomModelSet& set,
                                  const RandomWriteHooks& hooks) {
  const fs::path root(dir);
  check_space(root, set);
  for (const RandomModelFile& f : set.files) {
    const fs::path path = root / f.path;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    LTX2_CHECK(!ec, "{}: cannot create the folder: {}", path.parent_path().string(), ec.message());
    const auto start = std::chrono::steady_clock::now();
    if (hooks.check_stop) hooks.check_stop();
    if (f.is_safetensors()) {
      std::vector<TensorSpec> specs;
      specs.reserve(f.tensors.size());
      for (const RandomTensor& t : f.tensors) specs.push_back(t.spec);
      write_safetensors_streamed(
          path.string(), specs, f.metadata, [&](size_t i, uint64_t offset, uint8_t* out, size_t bytes) {
            if (hooks.check_stop) hooks.check_stop();
            const RandomTensor& t = f.tensors[i];
            t.values.fill_bf16(static_cast<int64_t>(offset / 2), static_cast<int64_t>(bytes / 2),
                               reinterpret_cast<uint16_t*>(out), t.gain);
          });
    } else {
      write_file_atomically(path.string(), f.text);
    }
    if (path.filename() == kGemmaIndex) remove_stale_shards(root, fs::path(f.path).parent_path(), set);
    if (hooks.file_written)
      hooks.file_written(f, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  ModelPaths p = set.paths;
  for (std::string* s : {&p.checkpoint, &p.transformer, &p.text_encoder, &p.video_vae, &p.audio_vae,
                         &p.spatial_upsampler, &p.gemma_root})
    *s = under(root, *s);
  for (LoraFile& l : p.distilled_loras) l.path = under(root, l.path);
  return p;
}

}  // namespace ltx2::model_sets
