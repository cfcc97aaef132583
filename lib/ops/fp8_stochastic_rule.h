// The reference's fp8-cast LoRA fuse on CUDA, element by element, one rule for the CPU and the CUDA
// kernel so that both give the same bits (ops/stochastic_round.h). The reference
// (ltx_core.quantization.fp8_cast.fuse_cast_fp8_weight, its Triton kernel fused_add_round_kernel,
// seed 0) computes for the element at flat index i of an F8_E4M3 weight w and its bf16 LoRA delta d:
//   x   = f16(w) + f16(d)                       (float16, one rounding)
//   eps = the F8_E4M3 step at x's exponent      (the subnormal step below 2^-6; 0 where x is 0)
//   u   = tl.rand(seed, i) - 0.5                (Triton's Philox 4x32-10, the first word)
//   out = bf16(float(x) + u * eps)              (float32, then bf16)
// and the caller casts `out` to F8_E4M3 (to nearest, as torch). Triton's rand: the first word of
// Philox(key = seed split into 32-bit halves, counter = (i, 0, 0, 0)) as int32, negatives
// complemented, times the float 0x2FFFFFFF (2^-31 (1 - 2^-24)). Every step below is exact or one
// IEEE rounding written out, so no compiler contraction can change a bit. Checked against the
// reference's kernel run by Triton's interpreter (golden case fp8_cast_stochastic_fuse, all 7,680
// elements equal); one thing that check cannot see: if Triton's GPU build contracts rand's
// `x * scale - 0.5` into an FMA, a draw can differ in its last bit, which moves a result only when
// it lands within that bit of a bf16 rounding boundary.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace ltx2::ops::fp8_stochastic {

// Philox 4x32 with 10 rounds; returns the first word of the output for counter (c0, 0, 0, 0).
LTX2_HOST_DEVICE inline uint32_t philox_first_word(uint64_t seed, uint32_t c0) {
  uint32_t c1 = 0, c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0, p2 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p2 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p2);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0;
}

// tl.rand(seed, offset) - 0.5 for a 32-bit offset.
LTX2_HOST_DEVICE inline float centered_uniform(uint64_t seed, uint32_t offset) {
  int32_t x = static_cast<int32_t>(philox_first_word(seed, offset));
  if (x < 0) x = ~x;
  // int32 -> float rounds to nearest even on both sides; the product of two floats is exact in
  // double, so rounding it to float is the one float32 multiply.
  const float product =
      static_cast<float>(static_cast<double>(static_cast<float>(x)) * 4.6566125955216364e-10);
  return product - 0.5f;
}

// a + b of two float16 values rounded once to float16 (as the GPU's add.f16): both are multiples of
// 2^-24 below 2^16 in magnitude, so their sum is exact as an integer count of 2^-24 steps.
LTX2_HOST_DEVICE inline uint16_t f16_add(uint16_t a, uint16_t b) {
  if (((a >> 10) & 0x1f) == 0x1f || ((b >> 10) & 0x1f) == 0x1f)
    return f32_to_f16(f16_to_f32(a) + f16_to_f32(b));  // infinities and NaN
  auto steps = [](uint16_t h) {
    const int64_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    const int64_t m = exp == 0 ? mant : (mant | 0x400) << (exp - 1);
    return (h & 0x8000) ? -m : m;
  };
  const int64_t sum = steps(a) + steps(b);
  if (sum == 0) return static_cast<uint16_t>(a & b & 0x8000);  // -0 only for -0 + -0
  const uint16_t sign = sum < 0 ? 0x8000 : 0;
  uint64_t m = static_cast<uint64_t>(sum < 0 ? -sum : sum);
  if (m < 0x400) return static_cast<uint16_t>(sign | m);  // a subnormal, exact
  int shift = 0;
  while ((m >> shift) >= 0x800) ++shift;  // keep 11 significant bits
  uint64_t kept = m >> shift;
  if (shift > 0) {
    const uint64_t rest = m & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (kept & 1))) ++kept;
    if (kept == 0x800) {
      kept >>= 1;
      ++shift;
    }
  }
  const uint32_t exp = static_cast<uint32_t>(shift) + 1;
  if (exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);
  return static_cast<uint16_t>(sign | (exp << 10) | (kept & 0x3ff));
}

// The rule of the header for one element: the F8_E4M3 code w, the delta's bf16 bits d, the
// centered uniform u of its index; returns the bf16 bits of `out`.
LTX2_HOST_DEVICE inline uint16_t fused_element(uint8_t w, uint16_t d, float u) {
  const uint16_t x = f16_add(f32_to_f16(f8e4m3_to_f32(w)), f32_to_f16(bf16_to_f32(d)));
  const int exp_bits = (x >> 10) & 0x1f;
  int exponent = (exp_bits > 0 ? exp_bits - 15 : -14) + 7;  // F8_E4M3's biased exponent
  exponent = exponent > 15 ? 15 : (exponent < 0 ? 0 : exponent);
  int eps_exp = exponent - 7 - 3 + 15;  // the step's float16 exponent field
  eps_exp = eps_exp > 31 ? 31 : (eps_exp < 0 ? 0 : eps_exp);
  const uint16_t eps_bits =
      exponent > 0 ? static_cast<uint16_t>(eps_exp << 10) : static_cast<uint16_t>(6 << 10);
  const float xf = f16_to_f32(x);
  const float eps = xf == 0.f ? 0.f : f16_to_f32(eps_bits);
  // u * eps is exact (eps a power of two, the product far above float's subnormals), so the sum is
  // the one float32 rounding whether or not it is contracted.
  return f32_to_bf16(xf + u * eps);
}

}  // namespace ltx2::ops::fp8_stochastic
