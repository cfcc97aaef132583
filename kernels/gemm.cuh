// The cuBLASLt GEMM of gemm.cu, shared with the kernels that lower an op to GEMMs (conv.cu,
// gemm_fp8.cu).
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// Column-major D[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[m]), batched with the given strides,
// then GELU (tanh form) when `gelu`. A is [m, k] (lda) untransposed or [k, m] transposed; likewise B.
// Types: all bf16 (fp32 accumulation), all f32 (plain fp32), or FP8 A and B (F8_E4M3, A transposed
// and B not, as cuBLASLt's FP8 kernels require) with a bf16 or f32 D, multiplied by the float32
// device scalars a_scale · b_scale. The bias has D's dtype (bf16 with FP8 operands).
struct GemmParams {
  DType a_dtype = DType::F32, b_dtype = DType::F32, d_dtype = DType::F32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* B = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* D = nullptr;
  int64_t ldd = 0, stride_d = 0;
  int64_t batch = 1;
  const void* bias = nullptr;
  bool gelu = false;
  const float* a_scale = nullptr;  // FP8 operands only
  const float* b_scale = nullptr;
};

// Params whose A, B and D are all `t` (bf16 or f32), the rest to fill in.
inline GemmParams same_dtype(DType t) {
  GemmParams p;
  p.a_dtype = p.b_dtype = p.d_dtype = t;
  return p;
}

// Enqueued on the device of `out` (its default stream); nothing waits for it.
void gemm(const Tensor& out, const GemmParams& p);

}  // namespace ltx2::cuda
