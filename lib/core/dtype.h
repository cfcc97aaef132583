// Element types and the scalar conversions between them.
//
// bf16 and f16 are stored as raw uint16_t bit patterns; conversions round to nearest even, the way
// PyTorch's .to(torch.bfloat16) does, so weights and fixtures round identically here and there.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ltx2 {

enum class DType : uint8_t { F32, BF16, F16, I32, I64, U8, Bool };

size_t dtype_size(DType t);
// Our name: "f32", "bf16", ...
const char* dtype_name(DType t);
// The safetensors name: "F32", "BF16", "F16", "I32", "I64", "U8", "BOOL".
const char* dtype_safetensors_name(DType t);
// Parses a safetensors dtype name; false for names we do not support (F64, F8_*, ...).
bool dtype_from_safetensors(std::string_view name, DType* out);
bool dtype_is_floating(DType t);

inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) return 0x7fc0;  // NaN stays NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Rounds a float to the nearest bf16 value and back (to emulate bf16 math in float32 code).
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace ltx2
