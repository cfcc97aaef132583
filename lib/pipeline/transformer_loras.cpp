// LoRA fusion into a loaded transformer and its undo (see transformer_loras.h).
#include "pipeline/transformer_loras.h"

namespace ltx2::pipeline {

TransformerLoras::TransformerLoras(models::transformer::TransformerWeights clean)
    : weights_(std::make_unique<models::transformer::TransformerWeights>(std::move(clean))) {
  slots_ = weights_->named_tensors();
  for (const auto& [name, slot] : slots_) map_[name] = *slot;
}

void TransformerLoras::fuse(const std::vector<LoraWithStrength>& loras) {
  if (loras.empty()) {
    restore();
    return;
  }
  fusion_.apply(map_, loras);
  write_back();
}

void TransformerLoras::restore() {
  fusion_.restore(map_);
  write_back();
}

void TransformerLoras::write_back() {
  for (const auto& [name, slot] : slots_) *slot = map_.at(name);
}

}  // namespace ltx2::pipeline
