// The matrix products (ops/linear.h): dispatch to the CUDA table or the CPU kernels;
// linear_gelu_tanh on the CPU is the composition of linear and the tanh GELU. The FP8 linears'
// shared checks are here.
#include "ops/linear.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"
#include "ops/elementwise.h"

namespace ltx2::ops {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  LTX2_DISPATCH_CUDA(x.device(), linear, x, w, bias);
  return cpu::linear(x, w, bias);
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& w, const Tensor& bias) {
  LTX2_DISPATCH_CUDA(x.device(), linear_gelu_tanh, x, w, bias);
  return gelu_tanh(linear(x, w, bias));
}

Tensor linear_fp8(const Tensor& x, const Fp8Linear& w, bool gelu_tanh) {
  // Per-row scaling: the rows quantized here, once for this linear (the one place the choice is made).
  if (!w.input_scale.defined()) return linear_fp8(quantize_rows_f8e4m3(x), w, gelu_tanh);
  LTX2_DISPATCH_CUDA(x.device(), linear_fp8, x, w, gelu_tanh);
  return cpu::linear_fp8(x, w, gelu_tanh);
}

Fp8Rows quantize_rows_f8e4m3(const Tensor& x) {
  LTX2_CHECK(x.dim() >= 1 && x.size(-1) > 0, "quantize_rows_f8e4m3: x {} has no rows to quantize", x.str());
  LTX2_CHECK(x.dtype() == DType::BF16 || x.dtype() == DType::F32,
             "quantize_rows_f8e4m3: x must be bf16 or f32, got {}", x.str());
  LTX2_DISPATCH_CUDA(x.device(), quantize_rows_f8e4m3, x);
  return cpu::quantize_rows_f8e4m3(x);
}

Tensor linear_fp8(const Fp8Rows& x, const Fp8Linear& w, bool gelu_tanh) {
  const Tensor& c = x.codes;
  LTX2_CHECK(c.dtype() == DType::F8E4M3 && c.dim() >= 1 && c.is_contiguous(),
             "linear_fp8: row codes must be a contiguous F8_E4M3 tensor, got {}", c.str());
  LTX2_CHECK(w.weight.dtype() == DType::F8E4M3 && w.weight.dim() == 2 && c.size(-1) == w.weight.size(1),
             "linear_fp8: rows {} do not match the F8_E4M3 weight {}", c.str(), w.weight.str());
  const int64_t rows = c.numel() / c.size(-1), out = w.weight.size(0);
  LTX2_CHECK(x.scales.defined() && x.scales.dtype() == DType::F32 && x.scales.numel() == rows,
             "linear_fp8: {} rows need {} float32 scales, got {}", c.str(), rows,
             x.scales.defined() ? x.scales.str() : "none");
  LTX2_CHECK(w.weight_scale.defined() && w.weight_scale.dtype() == DType::F32 && w.weight_scale.dim() == 1 &&
                 w.weight_scale.numel() == out,
             "linear_fp8: per-row activations need a float32 scale per output channel ({}), got {}", out,
             w.weight_scale.defined() ? w.weight_scale.str() : "none");
  LTX2_CHECK(!w.input_scale.defined(), "linear_fp8: rows quantized per row take no static input scale");
  for (const Tensor* t : {&x.scales, &w.weight, &w.weight_scale, &w.bias})
    LTX2_CHECK(!t->defined() || t->device() == c.device(), "linear_fp8: {} is not on the rows' device {}",
               t->str(), c.device().str());
  LTX2_CHECK(x.dtype == DType::BF16 || x.dtype == DType::F32, "linear_fp8: rows of dtype {} (bf16 or f32)",
             dtype_name(x.dtype));
  LTX2_DISPATCH_CUDA(c.device(), linear_fp8_rows, x, w, gelu_tanh);
  return cpu::linear_fp8_rows(x, w, gelu_tanh);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  LTX2_DISPATCH_CUDA(a.device(), matmul, a, b);
  return cpu::matmul(a, b);
}

}  // namespace ltx2::ops
