// The full-size transformer the benchmarks time (`ltx2 bench transformer`, `ltx2 bench scaling`):
// the released 19B / 22B configs, weights synthesized for ONE block (bf16, on the device) through
// the model's own loader and shared by every layer, and random bf16 inputs at the pipeline's shapes
// with per-token timesteps and no masks.
#pragma once

#include <string>

#include "io/configs/transformer_config.h"
#include "io/quantization.h"
#include "models/transformer/transformer.h"

namespace ltx2::bench_model {

constexpr int64_t kAudioTokens = 126, kTextTokens = 1024, kCaptionChannels = 3840;

// "19b" | "22b" (reference transformer.md §2.2); anything else is refused by name.
TransformerConfig model_config(const std::string& model);

struct Shape3 {
  std::string name;
  int64_t frames, height, width;  // latent grid
  int64_t tokens() const { return frames * height * width; }
};
// "stage1" (16x16x24: 6,144 video tokens) | "full" (16x32x48: 24,576).
Shape3 shape_named(const std::string& name);
// The reference's measured ms per forward (transformer.md §9, one H200, batch 1).
double reference_ms(const std::string& model, const std::string& shape);

// Deterministic uniform(-scale, scale) values rounded to bf16, on `device`.
Tensor random_bf16(const Shape& shape, uint64_t seed, float scale, Device device);

// config.num_layers blocks all sharing one synthesized block's tensors (bf16 on `device`).
// Quantization::Fp8ScaledMm then holds the linears fp8-cast_covers names (every block's q, k, v,
// out and feed-forward linears, as a published FP8 checkpoint stores them) in F8_E4M3 with a
// per-tensor weight scale (quantize_f8e4m3_per_tensor) and the static input scale kFp8InputScale:
// the FP8 GEMMs a real FP8 checkpoint runs, for timing (the synthesized weights carry no
// calibrated scales). Quantization::Fp8 loads them as fp8 loads a bf16 checkpoint (per-channel
// F8_E4M3, per-token activation scales on the fly). fp8-cast is refused (its numbers, not speed).
models::transformer::TransformerWeights shared_block_weights(const TransformerConfig& config, Device device,
                                                             Quantization quantization = Quantization::None);
// |x| up to 8 is representable (448 x 8 / 448): the inputs' scale after the block's norms.
constexpr float kFp8InputScale = 8.f / 448.f;

struct Inputs {
  models::transformer::Modality video, audio;
};
// Random latents and contexts, the grid's positions, sigma 0.6 per token, batch 1.
Inputs random_inputs(const TransformerConfig& config, const Shape3& shape, Device device);

}  // namespace ltx2::bench_model
