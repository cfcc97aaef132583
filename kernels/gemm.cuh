// The cuBLASLt GEMM of gemm.cu, shared with the kernels that lower an op to GEMMs (conv.cu,
// gemm_fp8.cu).
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// Column-major D[m, n] = op(A)[m, k] · op(B)[k, n] (+ bias[m]), batched with the given strides,
// then GELU (tanh form) when `gelu`. A is [m, k] (lda) untransposed or [k, m] transposed; likewise B.
// Types: all bf16 (fp32 accumulation), all f32 (plain fp32), or FP8 A and B (F8_E4M3, A transposed
// and B not, as cuBLASLt's FP8 kernels require) with a bf16 or f32 D, multiplied by the float32
// device scalars a_scale · b_scale, or with `outer_vector_scales` by a_scale[i] · b_scale[j] for
// D[i, j] (a_scale has m values, b_scale n; cuBLASLt's outer-vector mode, Hopper, both or neither).
// The bias has D's dtype (bf16 with FP8 operands).
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
  bool outer_vector_scales = false;
};

// Params whose A, B and D are all `t` (bf16 or f32), the rest to fill in.
inline GemmParams same_dtype(DType t) {
  GemmParams p;
  p.a_dtype = p.b_dtype = p.d_dtype = t;
  return p;
}

// The row-major linear y[M, N] = x[M, K] · w[N, K]ᵀ (+ bias, then GELU) as the column-major
// yᵀ[N, M] = w · xᵀ: w, stored row-major [N, K], is a column-major [K, N] taken transposed. w and x
// are `operands`, y is `out`; all contiguous.
inline GemmParams linear_params(DType operands, DType out, const void* w, const void* x, void* y, int64_t M,
                                int64_t N, int64_t K, const void* bias, bool gelu) {
  GemmParams p;
  p.a_dtype = p.b_dtype = operands;
  p.d_dtype = out;
  p.trans_a = true;
  p.m = N, p.n = M, p.k = K;
  p.A = w, p.lda = K;
  p.B = x, p.ldb = K;
  p.D = y, p.ldd = N;
  p.bias = bias;
  p.gelu = gelu;
  return p;
}

// Enqueued on the device of `out` (its default stream); nothing waits for it.
void gemm(const Tensor& out, const GemmParams& p);

}  // namespace ltx2::cuda
