// Quantized checkpoints: the scale tensors that sit beside 8-bit weights, their rules, and the
// user's quantization policy.
//
// The published FP8 files (ltx-2-19b-*-fp8, ltx-2.3-22b-*-fp8) store a block linear's weight as
// F8_E4M3 beside float32 scalars: "<linear>.weight_scale" (the weight is float(weight) x
// weight_scale) and "<linear>.input_scale" (the static activation scale of the reference's
// fp8-scaled-mm); a "<linear>.bias_scale" would belong to "<linear>.bias" the same way. Reading a
// weight with a scale honours it (WeightView::load); these rules are checked when a set is opened,
// so a malformed file is refused before anything is loaded, in one line naming the tensor.
#pragma once

#include <string>

#include "core/device.h"

namespace ltx2 {

class WeightSet;

// How the transformer's weights are held and multiplied (`--quantization`, the reference's names).
enum class Quantization {
  Auto,     // the default: fp8 for an FP8 checkpoint on a Hopper GPU, none otherwise (resolve_quantization)
  None,     // the checkpoint's values (scales honoured) in the compute dtype
  Fp8Cast,  // the reference's fp8-cast: block linears rounded to F8_E4M3 (via bf16), upcast to compute
  Fp8ScaledMm,  // the reference's fp8-scaled-mm: FP8 GEMMs with the checkpoint's scales
  Fp8,          // ours: FP8 GEMMs, a scale per weight row (output channel) and per token, on the fly
};

const char* quantization_name(Quantization q);  // "auto", "none", "fp8-cast", "fp8-scaled-mm", "fp8"
// What `auto` stands for on `device` for a checkpoint whose block linears are (not) stored in FP8:
// fp8 on a GPU of compute capability 9.x (Hopper's FP8 tensor cores and cuBLASLt's per-row scaled FP8
// GEMMs), none elsewhere (the scales honoured). Any other mode is returned as it is.
Quantization resolve_quantization(Quantization q, bool fp8_checkpoint, Device device);
// Parses a --quantization value; throws ltx2::Error naming the value and the accepted ones (the
// reference's nvfp4 kinds are refused with the reason).
Quantization parse_quantization(const std::string& name);

// The scale tensor that belongs to `tensor_name`: "a.weight" -> "a.weight_scale", "a.bias" ->
// "a.bias_scale"; "" for any other name.
std::string scale_key_of(const std::string& tensor_name);
// The static input scale of the linear whose weight is `weight_name`: "a.weight" ->
// "a.input_scale"; "" for any other name.
std::string input_scale_key_of(const std::string& weight_name);

// Checks a set's quantization tensors: every 8-bit float tensor has its scale; every scale key is a
// known one (.weight_scale, .bias_scale, .input_scale), a float scalar, and belongs to a tensor of
// the set (".input_scale" to the linear's ".weight"). Throws ltx2::Error naming the tensor and file.
void validate_quantization(const WeightSet& set);

}  // namespace ltx2
