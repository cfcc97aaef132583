// LoRA files: the low-rank pairs of a LoRA safetensors file, keyed by the model weight they adapt.
//
// File keys are "diffusion_model.<module>.lora_A.weight" ([rank, in]) and
// "diffusion_model.<module>.lora_B.weight" ([out, rank]); the ComfyUI renaming removes
// "diffusion_model.", and the pair adapts the transformer weight "<module>.weight" (named as in
// the checkpoint after its "model.diffusion_model." prefix). "<module>.alpha" tensors are ignored
// (the reference applies no alpha/rank scaling), as are modules with lora_A but no lora_B.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ltx2 {

struct LoraPair {
  Tensor down;  // lora_A [rank, in]
  Tensor up;    // lora_B [out, rank]
};

struct LoraWeights {
  std::string source;                     // file path (for messages)
  std::map<std::string, LoraPair> pairs;  // target weight name "<module>.weight" -> pair
  std::vector<std::string> ignored_keys;  // renamed keys that form no pair (alpha, lone A/B, other)
};

// The ComfyUI renaming: every "diffusion_model." removed.
std::string lora_renamed_key(const std::string& file_key);

// Pairs from named tensors (file keys); views are kept, not copied. Shapes are checked: A 2-D,
// B 2-D, matching rank.
LoraWeights lora_from_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors, std::string source);

// Reads a LoRA safetensors file (memory-mapped; the pairs are zero-copy views of any float dtype).
std::shared_ptr<const LoraWeights> read_lora_file(const std::string& path);

}  // namespace ltx2
