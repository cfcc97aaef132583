// A transformer's weights with LoRA sets switched in and out: fuse() replaces the adapted weights
// by fused copies computed from the clean weights (lora_fuse.h, the reference's bf16 rule), and
// restore() puts the clean tensors back (the very same storage, so bit for bit).
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
  explicit TransformerLoras(models::transformer::TransformerWeights clean);

  // Fuses `loras` (in order) into the clean weights, replacing any previous fusion; an empty list
  // restores.
  void fuse(const std::vector<LoraWithStrength>& loras);
  void restore();
  bool fused() const { return fusion_.active(); }

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
};

}  // namespace ltx2::pipeline
