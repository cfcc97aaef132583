// What the tiny model set and the full-size random sets share: each model's own loader run over a
// WeightSynthesizer, which yields the tensors of its real checkpoint layout (the monolith's
// components for a metadata config, the latent upsampler, Gemma's text model), the LoRA pairs of a
// transformer's blocks, and the atomic writing of a small file of a set.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "io/configs/gemma_config.h"
#include "io/weights.h"

namespace ltx2::model_sets {

// Every tensor of a monolith checkpoint with metadata `config` ({transformer, vae, audio_vae,
// vocoder}): model.diffusion_model.* (the transformer and the two embeddings connectors),
// text_embedding_projection.* (V1 or V2, its input width made for `gemma`'s hidden states),
// vae.{decoder,encoder,per_channel_statistics}.*, audio_vae.{decoder,per_channel_statistics}.* and
// vocoder.*.
void synthesize_checkpoint(const std::shared_ptr<WeightSynthesizer>& synth, const nlohmann::json& config,
                           const GemmaConfig& gemma);
// The latent upsampler's bare keys, for its file's top-level metadata config.
void synthesize_upsampler(const std::shared_ptr<WeightSynthesizer>& synth, const nlohmann::json& config);
// Gemma's text model under the published language_model.model.* names.
void synthesize_gemma_text(const std::shared_ptr<WeightSynthesizer>& synth, const GemmaConfig& gemma);

// One LoRA pair: diffusion_model.<module>.lora_A.weight [rank, in] and .lora_B.weight [out, rank]
// for the linear weight model.diffusion_model.<module>.weight [out, in].
struct LoraTarget {
  std::string down, up;
  Shape down_shape, up_shape;
};
// A pair for every linear (2-D) weight of the transformer blocks among a checkpoint's tensors, in
// their order.
std::vector<LoraTarget> lora_targets(const std::vector<std::pair<std::string, Shape>>& checkpoint,
                                     int64_t rank);
// LoRA up-projections are made as synthesized values times this, so that the fused LoRA is a small
// change of each weight.
inline constexpr float kLoraUpScale = 0.1f;

// Writes `bytes` to "<path>.tmp.<pid>" and renames it into place (removed on failure).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace ltx2::model_sets
