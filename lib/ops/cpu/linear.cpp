// CPU matrix products: float32, row-major. The inner loop is a dot product over K with an OpenMP
// SIMD reduction (vectorised without -ffast-math); rows x column-blocks are spread over threads.
#include "ops/linear.h"

#include <omp.h>

#include "core/error.h"
#include "ops/cpu/bf16_widening.h"
#include "ops/cuda_ops.h"
#include "ops/elementwise.h"

namespace ltx2::ops {

namespace {

// C[m, n] = sum_k A[m, k] * B[n, k] (+ bias[n]); A [M, K], B [N, K], C [M, N], all contiguous.
void gemm_abt(const float* A, const float* B, const float* bias, float* C, int64_t M, int64_t N, int64_t K) {
  constexpr int64_t kBlockN = 32;
  int64_t nblocks = (N + kBlockN - 1) / kBlockN;
#pragma omp parallel for collapse(2) schedule(static) if (M * N * K > 32768)
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t nb = 0; nb < nblocks; ++nb) {
      const float* a = A + m * K;
      int64_t n_end = std::min(N, (nb + 1) * kBlockN);
      for (int64_t n = nb * kBlockN; n < n_end; ++n) {
        const float* b = B + n * K;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (int64_t k = 0; k < K; ++k) s += a[k] * b[k];
        C[m * N + n] = s + (bias ? bias[n] : 0.f);
      }
    }
  }
}

void require_f32(const Tensor& t, const char* op) {
  LTX2_CHECK(t.dtype() == DType::F32, "{}: CPU path takes f32 tensors, got {}", op, t.str());
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  LTX2_DISPATCH_CUDA(x.device(), linear, x, w, bias);
  if (cpu::any_bf16({&x, &w, &bias}))
    return linear(cpu::widen(x), cpu::widen(w), cpu::widen(bias)).to(x.dtype());
  require_f32(x, "linear");
  require_f32(w, "linear");
  LTX2_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1),
             "linear: input {} does not match weight {}", x.str(), w.str());
  int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
  if (bias.defined()) LTX2_CHECK(bias.numel() == N, "linear: bias {} for {} outputs", bias.str(), N);
  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape);
  gemm_abt(xc.data<float>(), wc.data<float>(), bc.defined() ? bc.data<float>() : nullptr, y.data<float>(), M,
           N, K);
  return y;
}

Tensor linear_gelu_tanh(const Tensor& x, const Tensor& w, const Tensor& bias) {
  LTX2_DISPATCH_CUDA(x.device(), linear_gelu_tanh, x, w, bias);
  return gelu_tanh(linear(x, w, bias));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  LTX2_DISPATCH_CUDA(a.device(), matmul, a, b);
  if (cpu::any_bf16({&a, &b})) return matmul(cpu::widen(a), cpu::widen(b)).to(a.dtype());
  require_f32(a, "matmul");
  require_f32(b, "matmul");
  LTX2_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2),
             "matmul: shapes {} and {} do not chain", a.str(), b.str());
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  int64_t batch = a.numel() / (M * K);
  bool shared_b = b.dim() == 2;
  LTX2_CHECK(shared_b || b.numel() / (K * N) == batch, "matmul: batch of {} and {} differ", a.str(), b.str());
  Tensor ac = a.contiguous();
  // B transposed to [.., N, K] so the kernel reads both operands along K.
  Tensor bt = b.transpose(-1, -2).contiguous();
  Shape out_shape = a.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape);
  for (int64_t i = 0; i < batch; ++i) {
    gemm_abt(ac.data<float>() + i * M * K, bt.data<float>() + (shared_b ? 0 : i * N * K), nullptr,
             y.data<float>() + i * M * N, M, N, K);
  }
  return y;
}

}  // namespace ltx2::ops
