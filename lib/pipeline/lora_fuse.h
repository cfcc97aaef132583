// LoRA fusion into the transformer's weights, with the reference's bf16 rounding, and the undo.
//
// For a weight W adapted by LoRAs (B_i, A_i) at strengths s_i, in list order:
//   D = bf16( bf16(bf16(B_1) * s_1) @ bf16(A_1) )           (float32 accumulation)
//   D = bf16( D + s_i * (bf16(B_i) @ bf16(A_i)) )           for i >= 2 (one rounding, as addmm)
//   W' = bf16( D + W ), stored in W's dtype
// There is no alpha/rank scaling; a LoRA of strength 0 contributes nothing; a pair whose target
// is not in the weight map is skipped.
//
// A weight held in FP8 (F8_E4M3 beside its "<linear>.weight_scale" in the map) takes an FP8 rule
// instead: W' = float(w8) x scale + D in float32, then quantized again in its own scaling. Per
// tensor (fp8-scaled-mm) as the reference: s = 448 / max|W'|, w8' = e4m3(W' x s), scale' = 1 / s.
// Per output channel (fp8, a scale per row) the same row by row (quantize_f8e4m3_per_channel).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/lora.h"

namespace ltx2::pipeline {

struct LoraWithStrength {
  std::shared_ptr<const LoraWeights> lora;
  float strength = 1;
};

using LoraContributions = std::vector<std::pair<const LoraPair*, float>>;

// W' for one weight from its contributions (pair, strength), in order; at least one.
Tensor fuse_lora_weight(const Tensor& weight, const LoraContributions& contributions,
                        const std::string& name);

// The FP8 rule above for an F8_E4M3 weight and its float32 scale, a scalar or one per output
// channel (both on one device).
struct Fp8Fused {
  Tensor weight, scale;
};
Fp8Fused fuse_lora_fp8_weight(const Tensor& weight, const Tensor& scale,
                              const LoraContributions& contributions, const std::string& name);

// Weights by name (the transformer's keys without "model.diffusion_model.").
using WeightMap = std::map<std::string, Tensor>;

// Applies a set of LoRAs to a weight map and restores it. Fused weights are new tensors that
// replace the map's entries; the replaced originals are kept (as they were: no copy of an mmap'ed
// checkpoint is needed because nothing is written in place) until restore().
// How a weight fuses, by name: from its clean value and the LoRAs' delta D (float32 holding bf16
// values, on the weight's device) to its fused value in the weight's dtype. Empty: the bf16 rule
// (fuse_lora_weight). fp8-cast's rounds the weights it holds in F8_E4M3 back there.
using FuseRule = std::function<Tensor(const std::string& name, const Tensor& weight, const Tensor& delta)>;

// D of the header for `weight` from its contributions (at least one).
Tensor lora_delta(const Tensor& weight, const LoraContributions& contributions, const std::string& name);
// The bf16 rule given D: bf16(D + W) in W's dtype.
Tensor fuse_bf16(const Tensor& weight, const Tensor& delta);

class LoraFusion {
 public:
  // Fuses `loras` into `weights`, first restoring any previous fusion, each weight by `rule` (an
  // FP8-held one takes the FP8 rule and its scale is replaced too). Returns the
  // affected weights' names (sorted).
  std::vector<std::string> apply(WeightMap& weights, const std::vector<LoraWithStrength>& loras,
                                 const FuseRule& rule = {});
  // Puts the original tensors back (no-op when nothing is fused).
  void restore(WeightMap& weights);
  bool active() const { return !originals_.empty(); }

 private:
  WeightMap originals_;
};

}  // namespace ltx2::pipeline
