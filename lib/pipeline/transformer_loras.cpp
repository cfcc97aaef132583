// LoRA fusion into a loaded transformer and its undo (see transformer_loras.h).
#include "pipeline/transformer_loras.h"

#include "core/error.h"
#include "ops/stochastic_round.h"

namespace ltx2::pipeline {

TransformerLoras::TransformerLoras(models::transformer::TransformerWeights clean, Quantization quantization)
    : weights_(std::make_unique<models::transformer::TransformerWeights>(std::move(clean))),
      quantization_(quantization) {
  slots_ = weights_->named_tensors();
  for (const auto& [name, slot] : slots_) map_[name] = *slot;
}

void TransformerLoras::fuse(const std::vector<LoraWithStrength>& loras) {
  if (loras.empty()) {
    restore();
    return;
  }
  FuseRule rule;
  if (quantization_ == Quantization::Fp8Cast)
    rule = [](const std::string& name, const Tensor& weight, const Tensor& delta) {
      if (!models::transformer::fp8_cast_covers(name)) return fuse_bf16(weight, delta);
      // The reference's rule: on CUDA its stochastic rounding kernel with seed 0, elsewhere the bf16
      // add rounded to nearest. The held weight's values are F8_E4M3 values, so the casts are exact.
      if (weight.device().is_cuda())
        return ops::fp8_cast_fuse_stochastic(weight.to(DType::F8E4M3), delta.to(DType::BF16), 0)
            .to(DType::F8E4M3)
            .to(weight.dtype());
      return models::transformer::round_to_f8e4m3(fuse_bf16(weight, delta));
    };
  fusion_.apply(map_, loras, rule);
  current_ = loras;
  write_back();
}

void TransformerLoras::restore() {
  fusion_.restore(map_);
  current_.clear();
  write_back();
}

void TransformerLoras::push_stage(const std::vector<LoraWithStrength>& extra) {
  LTX2_CHECK(!saved_, "transformer LoRAs: a stage's LoRAs are already fused");
  auto saved = std::make_unique<Saved>(Saved{map_, fusion_, current_});
  std::vector<LoraWithStrength> all = current_;
  all.insert(all.end(), extra.begin(), extra.end());
  fuse(all);
  saved_ = std::move(saved);
}

void TransformerLoras::pop_stage() noexcept {
  if (!saved_) return;
  map_ = std::move(saved_->map);
  fusion_ = std::move(saved_->fusion);
  current_ = std::move(saved_->loras);
  saved_.reset();
  write_back();
}

void TransformerLoras::write_back() {
  for (const auto& [name, slot] : slots_) *slot = map_.at(name);
}

}  // namespace ltx2::pipeline
