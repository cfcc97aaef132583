// Full-size LTX-2 model sets with deterministic random weights (`ltx2 make-random`), so that the
// real job (prompt -> 1024x1536x121 video) can be run and timed without the published checkpoints:
// the published file names, key names and metadata configs of LTX-2 19B or LTX-2.3 22B, every tensor
// at full width, bf16.
//
// Nothing is ever whole in memory. Each model's own loader, run over a recording WeightSynthesizer
// on a one-layer config, gives every tensor's name and shape (synthesized_models.h); the per-layer
// names are repeated for the requested layer count; each file's header is written first and its
// values are then streamed chunk by chunk (write_safetensors_streamed), made in bf16 by
// SynthesizedValues of (the file's seed, the tensor's monolith name, the element index): the rule
// the tiny model uses, so values keep a forward finite the same way.
//
// Files, in DIR (19b | 22b names):
//   monolith  ltx-2-19b-distilled.safetensors | ltx-2.3-22b-distilled.safetensors: model.diffusion_model.*
//             (transformer + embeddings connectors), text_embedding_projection.*, vae.{decoder,
//             encoder,per_channel_statistics}.*, audio_vae.{decoder,per_channel_statistics}.*,
//             vocoder.*; metadata "config" {transformer, vae, audio_vae, vocoder} and "model_version"
//   split     (ComfyUI folders, LTX-2.5's published naming) diffusion_models/<release>-distilled-
//             transformer-bf16 (model.diffusion_model.* without the connectors), text_encoders/
//             <release>-text-projection-bf16 (text_embedding_projection.* + the connectors),
//             vae/<release>-video-vae-bf16 (bare decoder./encoder./per_channel_statistics.), vae/
//             <release>-audio-vae-bf16 (audio_vae.* + vocoder.*); each carries the whole metadata
//             config, as the loaders read a set's config from its first file
//   both      ltx-2[.3]-spatial-upscaler-x2-1.0.safetensors (config at the top level),
//             ltx-2[.3]-{19b,22b}-distilled-lora-384.safetensors (a rank-384 pair for every linear
//             of the transformer blocks), gemma-3-12b-it-qat-q4_0-unquantized/ (config.json, 5 GB
//             shards model-0000K-of-0000N.safetensors + model.safetensors.index.json, the tiny
//             model's SentencePiece tokenizer.model; the text model only: no vision tower)
//
// Not written, because no loader of ours reads them: the audio VAE encoder, the per-channel
// statistics beyond mean/std-of-means, Gemma's vision tower and its tokenizer.json/sidecar files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/weights.h"
#include "pipeline/request.h"

namespace ltx2::model_sets {

// The real block / layer count of both models' transformers and of Gemma 3 12B.
inline constexpr int64_t kFullSizeLayers = 48;
inline constexpr int64_t kDistilledLoraRank = 384;

// The full-size configs (the reference specs' values; transformer.md, vae-audio.md,
// text-pipelines.md). `model` is "19b" (LTX-2) or "22b" (LTX-2.3); anything else is refused by name.
// The checkpoint's metadata config {transformer, vae, audio_vae, vocoder}, its transformer with
// `layers` blocks.
nlohmann::json full_size_checkpoint_config(const std::string& model, int64_t layers = kFullSizeLayers);
std::string full_size_model_version(const std::string& model);
// The x2 spatial upsampler's top-level config (the same class and size in both releases).
nlohmann::json full_size_upsampler_config();
// Gemma 3 12B's config.json with `layers` decoder layers.
nlohmann::json full_size_gemma_config(int64_t layers = kFullSizeLayers);

enum class RandomLayout { Monolith, Split };

struct RandomModelOptions {
  std::string model = "19b";
  RandomLayout layout = RandomLayout::Monolith;
  int64_t layers = kFullSizeLayers;  // transformer blocks and Gemma layers, 1..48
  uint64_t seed = 0;
  // The parts to write: the checkpoint (the monolith, or the four split files), the upsampler, the
  // distilled LoRA, the Gemma folder.
  bool checkpoint = true, upsampler = true, lora = true, gemma = true;
};

// One tensor of a planned file: stored bf16, element i = values.at(i) * gain.
struct RandomTensor {
  TensorSpec spec;
  SynthesizedValues values;
  float gain = 1.f;
};

struct RandomModelFile {
  std::string path;                   // relative to the set's folder
  std::vector<RandomTensor> tensors;  // a safetensors file (sorted by name), or empty for ...
  std::map<std::string, std::string> metadata;
  std::string text;  // ... any other file (config.json, the index, tokenizer.model): its bytes
  bool is_safetensors() const { return !tensors.empty(); }
  uint64_t bytes() const;  // of the file on disk
};

struct RandomModelSet {
  std::vector<RandomModelFile> files;  // in writing order: a folder's index after its shards
  ModelPaths paths;                    // relative to the set's folder, for the generation programs
};

// Throws naming the option at fault (model, layers).
RandomModelSet plan_random_model_set(const RandomModelOptions& options);

struct RandomWriteHooks {
  // Called between pieces of data; may throw to abandon the set (the file being written is
  // removed; the files finished before it stay, each complete).
  std::function<void()> check_stop;
  std::function<void(const RandomModelFile& file, double seconds)> file_written;
};

// Writes the set into `dir` (created if missing; files of the same names are replaced, and shards
// of an earlier Gemma folder that the new index does not name are removed). Every file appears
// atomically. Returns the set's paths under `dir`.
ModelPaths write_random_model_set(const std::string& dir, const RandomModelSet& set,
                                  const RandomWriteHooks& hooks = {});

}  // namespace ltx2::model_sets
