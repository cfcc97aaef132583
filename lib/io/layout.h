// Which model components a weight set holds, recognised by the real checkpoints' key prefixes:
// monolith (model.diffusion_model., vae., audio_vae., vocoder., text_embedding_projection.),
// Comfy split files (decoder., encoder., per_channel_statistics.), LoRA files (diffusion_model.
// + .lora_A/.lora_B), the latent upsampler's bare keys and Hugging Face Gemma folders.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/weights.h"

namespace ltx2 {

enum class Component {
  Transformer,
  TextConnector,  // text_embedding_projection + the video/audio embeddings connectors
  VideoDecoder,
  VideoEncoder,
  VideoStats,  // per-channel latent statistics shared by encoder and decoder
  AudioDecoder,
  AudioEncoder,
  AudioStats,
  Vocoder,
  LatentUpsampler,
  TextModel,  // Gemma's language model
  VisionTower,  // Gemma's vision parts (unused by LTX-2)
  TextAssets,   // a packed text-encoder file's tokenizer and processor files, as uint8 bytes
  DurationHead,  // LTX-2.5's shot-length head (models/duration)
  Lora,
  Other,
};

// The tensors of a packed text-encoder file that hold its tokenizer as uint8 bytes: tokenizer.json
// (the reference's packer; its other files are hf_asset__<name>) or the SentencePiece model
// (ComfyUI's files).
inline constexpr const char* kTokenizerJsonTensor = "tokenizer_json";
inline constexpr const char* kSentencePieceTensor = "spiece_model";

const char* component_name(Component c);
// Metadata config path of a component ("transformer", "vae", ...), "" at the top level (the
// upsampler's file, a Gemma file), or nullptr when it has no config of its own.
const char* component_config_key(Component c);

Component classify_key(const std::string& key);

struct ComponentSummary {
  Component component;
  size_t tensors = 0;
  uint64_t bytes = 0;
  std::map<std::string, size_t> dtypes;  // dtype name -> tensor count
};

// One entry per component present, in enum order.
std::vector<ComponentSummary> summarize_components(const WeightSet& set);

// File-side prefixes of a component, monolith first, for WeightView.
std::vector<std::string> component_prefixes(Component c);

}  // namespace ltx2
