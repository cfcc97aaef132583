// LoRA fusion with bf16 rounding (emulated in float32: every bf16 result is a float32 value
// rounded to nearest-even bf16), and the FP8 rule, over lib/ops.
#include "pipeline/lora_fuse.h"

#include "core/error.h"
#include "io/quantization.h"
#include "models/transformer/weights.h"
#include "ops/elementwise.h"
#include "ops/linear.h"

namespace ltx2::pipeline {
namespace {

Tensor to_bf16_values(const Tensor& t) {
  return t.to(DType::BF16).to(DType::F32);
}

}  // namespace

// D of the header for a weight of `weight`'s shape, on its device (float32 holding bf16 values).
Tensor lora_delta(const Tensor& weight, const LoraContributions& contributions, const std::string& name) {
  LTX2_CHECK(!contributions.empty(), "LoRA fusion: no LoRA for weight '{}'", name);
  LTX2_CHECK(weight.dim() == 2, "LoRA fusion: weight '{}' is {}, not a matrix", name, weight.str());
  Tensor delta;
  for (const auto& [pair, strength] : contributions) {
    LTX2_CHECK(pair->up.size(0) == weight.size(0) && pair->down.size(1) == weight.size(1),
               "LoRA fusion: weight '{}' {} does not match lora_B {} @ lora_A {}", name,
               shape_str(weight.shape()), shape_str(pair->up.shape()), shape_str(pair->down.shape()));
    // The pair goes to the weight's device (a GPU transformer fuses there, not on the host).
    const Tensor up = to_bf16_values(pair->up.to(weight.device()));
    const Tensor down = to_bf16_values(pair->down.to(weight.device()));
    if (!delta.defined()) {
      delta = to_bf16_values(ops::matmul(to_bf16_values(ops::mul(up, strength)), down));
    } else {
      delta = to_bf16_values(ops::add(delta, ops::mul(ops::matmul(up, down), strength)));
    }
  }
  return delta;
}

Tensor fuse_bf16(const Tensor& weight, const Tensor& delta) {
  return ops::add(delta, weight.to(DType::F32)).to(DType::BF16).to(weight.dtype());
}

Tensor fuse_lora_weight(const Tensor& weight, const LoraContributions& contributions,
                        const std::string& name) {
  return fuse_bf16(weight, lora_delta(weight, contributions, name));
}

Fp8Fused fuse_lora_fp8_weight(const Tensor& weight, const Tensor& scale,
                              const LoraContributions& contributions, const std::string& name) {
  const bool per_channel = scale.dim() == 1 && weight.dim() == 2 && scale.numel() == weight.size(0);
  LTX2_CHECK(
      weight.dtype() == DType::F8E4M3 && scale.dtype() == DType::F32 && (scale.numel() == 1 || per_channel),
      "LoRA fusion: '{}' is not an F8_E4M3 weight with a float32 scale per tensor or per output "
      "channel ({}, scale {})",
      name, weight.str(), scale.str());
  const Tensor delta = lora_delta(weight, contributions, name);
  if (per_channel) {
    const Tensor value = ops::mul(weight.to(DType::F32), scale.view({-1, 1}));
    const auto q = models::transformer::quantize_f8e4m3_per_channel(ops::add(value, delta), name);
    return {q.weight, q.scale};
  }
  const float old_scale = scale.to(Device::cpu()).item();
  const Tensor fused = ops::add(weight.to_scaled(DType::F32, old_scale), delta);
  const models::transformer::Fp8Weight q = models::transformer::quantize_f8e4m3_per_tensor(fused, name);
  return {q.weight, q.scale};
}

std::vector<std::string> LoraFusion::apply(WeightMap& weights, const std::vector<LoraWithStrength>& loras,
                                           const FuseRule& rule) {
  restore(weights);
  std::map<std::string, LoraContributions> by_weight;
  for (const auto& l : loras) {
    LTX2_CHECK(l.lora != nullptr, "LoRA fusion: a LoRA entry has no weights");
    if (l.strength == 0.0f) continue;
    for (const auto& [name, pair] : l.lora->pairs)
      if (weights.count(name)) by_weight[name].emplace_back(&pair, l.strength);
  }
  std::vector<std::string> affected;
  WeightMap fused;
  for (const auto& [name, contributions] : by_weight) {
    const std::string scale_name = scale_key_of(name);
    const Tensor& weight = weights.at(name);
    if (weight.dtype() == DType::F8E4M3 && weights.count(scale_name)) {
      Fp8Fused f = fuse_lora_fp8_weight(weight, weights.at(scale_name), contributions, name);
      fused[name] = std::move(f.weight);
      fused[scale_name] = std::move(f.scale);
    } else {
      const Tensor delta = lora_delta(weight, contributions, name);
      fused[name] = rule ? rule(name, weight, delta) : fuse_bf16(weight, delta);
    }
    affected.push_back(name);
  }
  // Only after every weight fused without error is the map changed.
  for (auto& [name, t] : fused) {
    originals_[name] = weights[name];
    weights[name] = std::move(t);
  }
  return affected;
}

void LoraFusion::restore(WeightMap& weights) {
  for (auto& [name, t] : originals_) weights[name] = std::move(t);
  originals_.clear();
}

}  // namespace ltx2::pipeline
