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

// An FP8 linear. Two scalings:
// - per tensor, the reference's fp8-scaled-mm (its FP8Linear): x is quantized with the static input
//   scale, q = e4m3(clamp(x · (1 / input_scale), ±448)); weight_scale and input_scale are float32
//   scalars. An x that is already F8_E4M3 is taken as quantized with input_scale.
// - per row, ours (--quantization fp8): input_scale undefined, weight_scale [out] (one per output
//   channel), and each row of x (a token) quantized with its own scale, computed on the fly from the
//   row's largest magnitude (quantize_rows_f8e4m3).
// The e4m3 operands are multiplied with float32 accumulation, scaled, then the bias is added (and the
// tanh GELU applied when `gelu_tanh`), all before the one rounding to x's dtype (bf16 or f32; f32 for
// an F8_E4M3 x). The scales are on x's device.
// CPU: the same quantization, then the float32 linear of the dequantized operands. CUDA: a
// quantizing pass, then cuBLASLt's FP8 GEMM (e4m3 x e4m3, float32 accumulation, the scales by
// pointer: scalars, or outer vectors for the per-row scaling; bias and GELU in the epilogue, the bias
// read in bf16 even for an f32 result, as cuBLASLt's FP8 kernels require); in and out must be
// multiples of 16.
struct Fp8Linear {
  Tensor weight;        // F8_E4M3 [out, in]
  Tensor weight_scale;  // F32 [] or [out]: the weight's value is float(weight) · weight_scale (per row)
  Tensor input_scale;   // F32 [], the static activation scale; undefined: per-row scales
  Tensor bias;          // [out] or undefined
};
Tensor linear_fp8(const Tensor& x, const Fp8Linear& w, bool gelu_tanh = false);

// Rows quantized each with its own scale: the value of codes[r, i] is float(codes[r, i]) · scales[r].
struct Fp8Rows {
  Tensor codes;              // F8_E4M3 [..., K], contiguous
  Tensor scales;             // F32 [rows], rows = codes.numel() / K
  DType dtype = DType::F32;  // the rows' dtype before quantization: a linear of them answers in it
};
// x [..., K] by rows: scales[r] = row_scale_f8e4m3(max |x[r, :]|) and codes as ops/fp8_quantize.h.
Fp8Rows quantize_rows_f8e4m3(const Tensor& x);
// The per-row FP8 linear of rows quantized already (once for every linear that reads them); the
// weight's scale is per output channel. The result has x.dtype.
Tensor linear_fp8(const Fp8Rows& x, const Fp8Linear& w, bool gelu_tanh = false);

}  // namespace ltx2::ops
