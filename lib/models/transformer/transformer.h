// The LTX-2 audio+video diffusion transformer (LTXModel): 19B, 2.3 (22B, gated attention,
// cross-attention AdaLN, with or without the prompt AdaLN) and 2.5 (bias-free video FFN, keyframe
// embedding), split or interleaved RoPE; video-only, audio-only or both streams; per-sample
// perturbations. Written against lib/ops only; every attention goes through the AttentionStrategy.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "io/configs/transformer_config.h"
#include "models/transformer/attention_strategy.h"
#include "models/transformer/perturbations.h"
#include "models/transformer/weights.h"

namespace ltx2::models::transformer {

// One stream's inputs (the reference's Modality).
struct Modality {
  Tensor latent;          // [B, T, C_in] patchified tokens
  Tensor sigma;           // [B] the step's noise level (prompt AdaLN, the other stream's A<->V gate)
  Tensor timesteps;       // [B, T, 1], [B, T] or [B]: per-token timestep (denoise mask * sigma)
  Tensor positions;       // [B, n_axes, T, 2] [start, end) in seconds (time) / pixels (space)
  Tensor context;         // [B, S, C_ctx] text tokens
  Tensor context_mask;    // undefined, [B, S] integer 1 = valid, or a float additive bias
  Tensor attention_mask;  // undefined or [B, T, T] self-attention weights in [0, 1]
  Tensor keyframes_mask;  // undefined or [B, T, 1]: > 0 marks tokens given the keyframe embedding
  bool enabled = true;    // false: this stream's own updates are skipped
};

// Every tensor field of a Modality and its name, in one list for whoever reads them by name or
// handles all of them (batching guidance passes, splitting samples over ranks).
struct ModalityField {
  const char* name;
  Tensor Modality::*member;
};
inline constexpr std::array<ModalityField, 8> kModalityFields = {
    {{"latent", &Modality::latent},
     {"sigma", &Modality::sigma},
     {"timesteps", &Modality::timesteps},
     {"positions", &Modality::positions},
     {"context", &Modality::context},
     {"context_mask", &Modality::context_mask},
     {"attention_mask", &Modality::attention_mask},
     {"keyframes_mask", &Modality::keyframes_mask}}};

// A Modality whose tensor fields are read by name (kModalityFields); `get` returns an undefined
// tensor for a field that is absent (the parity checks and the tests read them from fixture files).
Modality modality_from_fields(const std::function<Tensor(const std::string& field)>& get);

struct TransformerOutput {
  Tensor video, audio;  // velocities [B, T, C_out]; undefined for an absent stream
};

// Receives named intermediates ("video.adaln_mod", "block0.video_x", ...) for debugging.
using Probe = std::function<void(const std::string& name, const Tensor& value)>;

class Transformer {
 public:
  Transformer(TransformerConfig config, TransformerWeights weights,
              std::shared_ptr<const AttentionStrategy> attention = std::make_shared<LocalAttention>());
  // Parses metadata config["transformer"] and loads the weights under the transformer's prefixes.
  static Transformer load(
      std::shared_ptr<const WeightSet> weights,
      std::shared_ptr<const AttentionStrategy> attention = std::make_shared<LocalAttention>(),
      DType dtype = DType::F32, Device device = Device::cpu(),
      Quantization quantization = Quantization::None);

  // Either stream may be null (video-only / audio-only).
  TransformerOutput forward(const Modality* video, const Modality* audio,
                            const BatchedPerturbations& perturbations = {}, const Probe& probe = {}) const;

  const TransformerConfig& config() const { return config_; }
  const TransformerWeights& weights() const { return weights_; }

 private:
  TransformerConfig config_;
  TransformerWeights weights_;
  std::shared_ptr<const AttentionStrategy> attention_;
};

// x0 = latent - velocity * timesteps (the X0Model head the pipelines use); timesteps broadcast
// as [B, T, 1].
Tensor denoised_from_velocity(const Tensor& latent, const Tensor& velocity, const Tensor& timesteps);

}  // namespace ltx2::models::transformer
