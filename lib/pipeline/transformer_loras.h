// A transformer's weights with LoRA sets switched in and out: fuse() replaces the adapted weights
// by fused copies computed from the clean weights (lora_fuse.h, the reference's bf16 rule), and
// restore() puts the clean tensors back (the very same storage, so bit for bit). A stage can fuse
// more LoRAs on top for a while (push_stage: the whole set fused from the clean weights, as the
// reference builds that stage's model) and pop_stage() returns to the previous tensors without
// recomputing them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/transformer/weights.h"
#include "pipeline/lora_fuse.h"

namespace ltx2::pipeline {

class TransformerLoras {
 public:
  // With fp8-cast, the fused weights it holds in F8_E4M3 are rounded back there by the reference's
  // fp8-cast fuse rule: on a GPU its stochastic rounding (ops::fp8_cast_fuse_stochastic, seed 0),
  // on the CPU the bf16 sum rounded to nearest.
  explicit TransformerLoras(models::transformer::TransformerWeights clean,
                            Quantization quantization = Quantization::None);

  // Fuses `loras` (in order) into the clean weights, replacing any previous fusion; an empty list
  // restores. A weight held in FP8 (fp8-scaled-mm) takes the FP8 rule of lora_fuse.h.
  void fuse(const std::vector<LoraWithStrength>& loras);
  void restore();
  bool fused() const { return fusion_.active(); }

  // Fuses the current LoRAs followed by `extra`; one level deep.
  void push_stage(const std::vector<LoraWithStrength>& extra);
  // Back to the weights before push_stage (no-op without one). Does not throw.
  void pop_stage() noexcept;

  // The weights as they are now (handles; copying them copies no data).
  const models::transformer::TransformerWeights& weights() const { return *weights_; }
  // Names and current tensors (checkpoint names without "model.diffusion_model.").
  const WeightMap& by_name() const { return map_; }

 private:
  void write_back();

  std::unique_ptr<models::transformer::TransformerWeights> weights_;  // fixed address: slots_ point in
  std::vector<std::pair<std::string, Tensor*>> slots_;
  WeightMap map_;
  LoraFusion fusion_;
  Quantization quantization_;
  std::vector<LoraWithStrength> current_;  // the LoRAs fused now
  struct Saved {
    WeightMap map;
    LoraFusion fusion;
    std::vector<LoraWithStrength> loras;
  };
  std::unique_ptr<Saved> saved_;  // set between push_stage and pop_stage
};

}  // namespace ltx2::pipeline
