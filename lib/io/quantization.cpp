#include "io/quantization.h"

#include "core/cuda/memory.h"
#include "core/error.h"
#include "io/weights.h"

namespace ltx2 {

namespace {

std::string strip(const std::string& s, const std::string& suffix) {
  return s.substr(0, s.size() - suffix.size());
}

// A scale key's last dotted part ends in "_scale" ("...to_q.weight_scale"); "scale_shift_table"
// and the like do not.
bool is_scale_key(const std::string& name) {
  const size_t dot = name.rfind('.');
  return name.substr(dot == std::string::npos ? 0 : dot + 1).ends_with("_scale");
}

// The tensor a known scale key belongs to, or "" for an unknown one.
std::string owner_of_scale(const std::string& name) {
  if (name.ends_with(".weight_scale") || name.ends_with(".bias_scale")) return strip(name, "_scale");
  if (name.ends_with(".input_scale")) return strip(name, ".input_scale") + ".weight";
  return "";
}

}  // namespace

const char* quantization_name(Quantization q) {
  switch (q) {
    case Quantization::Auto: return "auto";
    case Quantization::None: return "none";
    case Quantization::Fp8Cast: return "fp8-cast";
    case Quantization::Fp8ScaledMm: return "fp8-scaled-mm";
    case Quantization::Fp8: return "fp8";
  }
  return "?";
}

Quantization parse_quantization(const std::string& name) {
  for (Quantization q : {Quantization::Auto, Quantization::None, Quantization::Fp8Cast,
                         Quantization::Fp8ScaledMm, Quantization::Fp8})
    if (name == quantization_name(q)) return q;
  if (name == "nvfp4-cast" || name == "nvfp4-prequant")
    LTX2_FAIL(
        "--quantization {}: NVFP4 needs Blackwell's FP4 tensor cores, which this engine does not target "
        "(use fp8, fp8-cast or fp8-scaled-mm)",
        name);
  LTX2_FAIL("--quantization '{}': expected auto, none, fp8, fp8-cast or fp8-scaled-mm", name);
}

Quantization resolve_quantization(Quantization q, bool fp8_checkpoint, Device device) {
  if (q != Quantization::Auto) return q;
  const bool hopper = device.is_cuda() && cuda_compute_capability(device.index) / 10 == 9;
  return fp8_checkpoint && hopper ? Quantization::Fp8 : Quantization::None;
}

std::string scale_key_of(const std::string& tensor_name) {
  if (tensor_name.ends_with(".weight") || tensor_name.ends_with(".bias")) return tensor_name + "_scale";
  return "";
}

std::string input_scale_key_of(const std::string& weight_name) {
  return weight_name.ends_with(".weight") ? strip(weight_name, ".weight") + ".input_scale" : "";
}

void validate_quantization(const WeightSet& set) {
  const std::vector<std::string> names = set.names();
  bool quantized = false;
  for (const std::string& n : names)
    quantized = quantized || is_scale_key(n) || dtype_is_float8(set.info(n).dtype);
  if (!quantized) return;
  for (const std::string& n : names) {
    const TensorInfo& info = set.info(n);
    if (dtype_is_float8(info.dtype)) {
      const std::string scale = scale_key_of(n);
      LTX2_CHECK(!scale.empty(),
                 "{}: tensor '{}' is {} but is neither a .weight nor a .bias (its scale has no name)",
                 set.file_of(n).path(), n, dtype_safetensors_name(info.dtype));
      LTX2_CHECK(set.contains(scale), "{}: tensor '{}' is {} but its scale '{}' is missing",
                 set.file_of(n).path(), n, dtype_safetensors_name(info.dtype), scale);
    }
    if (!is_scale_key(n)) continue;
    const std::string owner = owner_of_scale(n);
    LTX2_CHECK(!owner.empty(),
               "{}: unknown scale tensor '{}' (known: .weight_scale, .bias_scale, .input_scale)",
               set.file_of(n).path(), n);
    LTX2_CHECK(shape_numel(info.shape) == 1 &&
                   (info.dtype == DType::F32 || info.dtype == DType::BF16 || info.dtype == DType::F16),
               "{}: scale '{}' must be one float value, not {} of shape {}", set.file_of(n).path(), n,
               dtype_safetensors_name(info.dtype), shape_str(info.shape));
    LTX2_CHECK(set.contains(owner), "{}: scale '{}' belongs to '{}', which is not in the file",
               set.file_of(n).path(), n, owner);
  }
}

}  // namespace ltx2
