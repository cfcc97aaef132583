// The cuBLASLt GEMM of gemm.cu, shared with the kernels that lower an op to GEMMs (conv.cu).
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// Column-major D[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[m]), batched with the given strides,
// then GELU (tanh form) when `gelu`. A is [m, k] (lda) untransposed or [k, m] transposed; likewise B.
// A, B, D and the bias are `dtype` (bf16: fp32 accumulation; f32: plain fp32); `out` names the
// device. Enqueued on the device's default stream; nothing waits for it.
void gemm(const Tensor& out, DType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const void* A, int64_t lda, int64_t stride_a, const void* B, int64_t ldb, int64_t stride_b, void* D,
          int64_t ldd, int64_t stride_d, int64_t batch, const void* bias, bool gelu = false);

}  // namespace ltx2::cuda
