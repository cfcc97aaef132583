// The tiny model set: a complete LTX-2 (19B-layout) model family with deterministic random
// weights in the real checkpoint layouts, small enough to run a whole pipeline in seconds on two
// CPU cores. Every tensor is made by running the model's own loader over a synthesizing
// WeightView (see WeightSynthesizer), so the files hold exactly what the loaders ask for.
//
// Folder layout:
//   checkpoint.safetensors        monolith: model.diffusion_model.* (DiT + connectors),
//                                 text_embedding_projection.*, vae.{decoder,encoder,
//                                 per_channel_statistics}.*, audio_vae.*, vocoder.*; metadata
//                                 "config" = {transformer, vae, audio_vae, vocoder}
//   spatial_upsampler.safetensors the x2 latent upsampler, its config at the top level
//   distilled_lora.safetensors    diffusion_model.<module>.lora_{A,B}.weight for every linear layer
//                                 of the transformer blocks
//   gemma/                        config.json, model.safetensors (Hugging Face names),
//                                 tokenizer.model (tiny trained SentencePiece)
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "pipeline/request.h"

namespace ltx2::model_sets {

// Bumped whenever the files change, so that caches of an older set are not reused.
inline constexpr const char* kTinyModelVersion = "tiny-v1";

struct TinyModelPaths {
  std::string dir, checkpoint, upsampler, lora, gemma;
};

TinyModelPaths tiny_model_paths(const std::string& dir);

// The checkpoint's metadata config {transformer, vae, audio_vae, vocoder}.
nlohmann::json tiny_checkpoint_config();
nlohmann::json tiny_upsampler_config();
// gemma/config.json.
nlohmann::json tiny_gemma_config();

// Writes the set into `dir` (created if missing; existing files of the set are replaced).
// Deterministic: the same bytes every time.
TinyModelPaths write_tiny_model_set(const std::string& dir);

// $LTX2_CACHE_DIR, else $XDG_CACHE_HOME/ltx2, else $HOME/.cache/ltx2.
std::string ltx2_cache_dir();

// The set in <cache>/<kTinyModelVersion>, made on first use: written into a private temporary
// folder and renamed into place, so a racing process either wins the rename or finds the
// finished folder.
TinyModelPaths ensure_tiny_model_set();

// The generation CLIs' default: when no checkpoint is given (neither a monolith nor split files),
// the tiny set (ensure_tiny_model_set) supplies the checkpoint and whichever of the Gemma root, the
// spatial upsampler and (two-stage) the distilled LoRA were left unset. Returns whether it did.
bool use_tiny_model_when_unset(ModelPaths& paths, PipelineKind kind);

}  // namespace ltx2::model_sets
