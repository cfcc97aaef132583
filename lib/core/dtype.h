// Element types and the scalar conversions between them.
//
// bf16 and f16 are stored as raw uint16_t bit patterns, the 8-bit floats (e4m3fn: 4 exponent bits,
// 3 mantissa bits, no infinities, 0x7f/0xff NaN, largest 448; e5m2: the upper byte of an f16) as
// uint8_t. Conversions round to nearest even the way PyTorch's .to(dtype) does (float8 included,
// without saturation: e4m3fn rounds |x| above 464 to NaN, e5m2 above 61440 to infinity), so weights
// and fixtures round identically here and there. The bf16 and 8-bit conversions are host and device
// functions: the GPU's converting copy uses these very ones (NaN included).
#pragma once

#ifdef __CUDACC__
#define LTX2_HOST_DEVICE __host__ __device__
#else
#define LTX2_HOST_DEVICE
#endif

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ltx2 {

enum class DType : uint8_t { F32, BF16, F16, I32, I64, U8, Bool, F8E4M3, F8E5M2 };

size_t dtype_size(DType t);
// Our name: "f32", "bf16", "f8e4m3", ...
const char* dtype_name(DType t);
// The safetensors name: "F32", "BF16", "F16", "I32", "I64", "U8", "BOOL", "F8_E4M3", "F8_E5M2".
const char* dtype_safetensors_name(DType t);
// Parses a safetensors dtype name; false for names we do not support (F64, I8, F8_E8M0, ...).
bool dtype_from_safetensors(std::string_view name, DType* out);
bool dtype_is_floating(DType t);
bool dtype_is_float8(DType t);

// A float's bit pattern and back.
LTX2_HOST_DEVICE inline uint32_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
LTX2_HOST_DEVICE inline float float_of(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}

LTX2_HOST_DEVICE inline float bf16_to_f32(uint16_t v) {
  return float_of(static_cast<uint32_t>(v) << 16);
}

LTX2_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = bits_of(f);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) return 0x7fc0;  // NaN stays NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// float16 bits to float (exact).
LTX2_HOST_DEVICE inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return float_of(sign | (mant ? 0x7fc00000u : 0x7f800000u));
  if (exp == 0)
    return float_of(sign | bits_of(static_cast<float>(mant) * 5.9604644775390625e-08f));  // m * 2^-24
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

// A float rounded to float16, to nearest even (infinity from 65520 on, NaN kept).
LTX2_HOST_DEVICE inline uint16_t f32_to_f16(float f) {
  const uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

namespace float8 {
// A finite float's magnitude (its bits, sign cleared, below the format's overflow) rounded to an
// 8-bit float of M mantissa bits and exponent bias B, to nearest even, as torch's casts do.
template <int M, int B>
LTX2_HOST_DEVICE inline uint32_t round_magnitude(uint32_t bits) {
  if (bits < (static_cast<uint32_t>(128 - B) << 23)) {
    // Below the smallest normal: adding a power of two whose float ulp is the format's subnormal
    // step leaves the value's multiple of that step, rounded to even, in the low bits.
    const uint32_t magic = static_cast<uint32_t>(127 - B + 23 - M + 1) << 23;
    return bits_of(float_of(bits) + float_of(magic)) - magic;
  }
  const uint32_t odd = (bits >> (23 - M)) & 1;  // ties go to the even mantissa
  bits += (static_cast<uint32_t>(B - 127) << 23) + ((1u << (22 - M)) - 1) + odd;
  return bits >> (23 - M);
}
}  // namespace float8

LTX2_HOST_DEVICE inline float f8e4m3_to_f32(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24, exp = (v >> 3) & 0xf, mant = v & 0x7;
  if (exp == 0xf && mant == 0x7) return float_of(sign | 0x7fc00000u);                      // NaN
  if (exp == 0) return float_of(sign | bits_of(static_cast<float>(mant) * 0.001953125f));  // m * 2^-9
  return float_of(sign | ((exp + 120) << 23) | (mant << 20));
}

LTX2_HOST_DEVICE inline uint8_t f32_to_f8e4m3(float f) {
  const uint32_t bits = bits_of(f) & 0x7fffffffu, sign = (bits_of(f) >> 24) & 0x80;
  // From 480 on (and NaN, infinity): NaN; above 464 rounds up into the NaN code too.
  return static_cast<uint8_t>((bits >= (1087u << 20) ? 0x7f : float8::round_magnitude<3, 7>(bits)) | sign);
}

LTX2_HOST_DEVICE inline float f8e5m2_to_f32(uint8_t v) {
  // The upper byte of an f16.
  const uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24, exp = (v >> 2) & 0x1f, mant = v & 0x3;
  if (exp == 0x1f) return float_of(sign | (mant ? 0x7fc00000u : 0x7f800000u));
  if (exp == 0) return float_of(sign | bits_of(static_cast<float>(mant) * 1.52587890625e-05f));  // m * 2^-16
  return float_of(sign | ((exp + 112) << 23) | (mant << 21));
}

LTX2_HOST_DEVICE inline uint8_t f32_to_f8e5m2(float f) {
  const uint32_t bits = bits_of(f) & 0x7fffffffu, sign = (bits_of(f) >> 24) & 0x80;
  // From 2^16 on: infinity (NaN stays NaN); above 61440 rounds up into infinity too.
  const uint32_t out =
      bits >= (143u << 23) ? (bits > 0x7f800000u ? 0x7f : 0x7c) : float8::round_magnitude<2, 15>(bits);
  return static_cast<uint8_t>(out | sign);
}

// Rounds a float to the nearest bf16 value and back (to emulate bf16 math in float32 code).
inline float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace ltx2
