// The matrix products (ops/linear.h): dispatch to the CUDA table or the CPU kernels;
// linear_gelu_tanh on the CPU is the composition of linear and the tanh GELU.
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
  LTX2_DISPATCH_CUDA(x.device(), linear_fp8, x, w, gelu_tanh);
  return cpu::linear_fp8(x, w, gelu_tanh);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  LTX2_DISPATCH_CUDA(a.device(), matmul, a, b);
  return cpu::matmul(a, b);
}

}  // namespace ltx2::ops
