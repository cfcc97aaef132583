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

}  // namespace ltx2::ops
