// Matrix products. CPU: float32 with float32 accumulation (OpenMP over rows and column blocks).
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

// y = x · wᵀ + bias. x [..., in], w [out, in] (PyTorch Linear layout), bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias = {});
// gelu_tanh(linear(x, w, bias)); CUDA: the GELU is cuBLASLt's epilogue (tanh form, on the float32
// accumulator, rounded once).
Tensor linear_gelu_tanh(const Tensor& x, const Tensor& w, const Tensor& bias = {});
// a [..., M, K] · b [..., K, N] -> [..., M, N]; b may also be 2-d [K, N] (shared by the batch).
Tensor matmul(const Tensor& a, const Tensor& b);

// An FP8 linear as the reference's fp8-scaled-mm (its FP8Linear): x is quantized per tensor with
// the static input scale, q = e4m3(clamp(x · (1 / input_scale), ±448)), multiplied by the F8_E4M3
// weight w8 [out, in] with float32 accumulation, scaled by input_scale · weight_scale, then the bias
// is added (and the tanh GELU applied when `gelu_tanh`), all before the one rounding to x's dtype.
// An x that is already F8_E4M3 is taken as quantized with input_scale. The scales are float32
// scalars on x's device. The result has x's dtype (bf16 or f32; f32 for an F8_E4M3 x).
// CPU: the same quantization, then the float32 linear of the dequantized operands. CUDA: a
// quantizing pass, then cuBLASLt's FP8 GEMM (e4m3 x e4m3, float32 accumulation, scales by pointer,
// bias and GELU in the epilogue, the bias read in bf16 even for an f32 result, as cuBLASLt's FP8
// kernels require); in and out must be multiples of 16.
struct Fp8Linear {
  Tensor weight;        // F8_E4M3 [out, in]
  Tensor weight_scale;  // F32 [], the weight's value is float(weight) · weight_scale
  Tensor input_scale;   // F32 [], the static activation scale
  Tensor bias;          // [out] or undefined
};
Tensor linear_fp8(const Tensor& x, const Fp8Linear& w, bool gelu_tanh = false);

}  // namespace ltx2::ops
