// CUDA Snake-Beta over [B, C, L] (ops/snake.h): elementwise, y = x + (1 / (exp(log_beta[c]) +
// 1e-9)) * sin(x * exp(log_alpha[c]))², the CPU op's operation order in float32 (precise expf and
// sinf). Output dtype = input dtype; the parameters may be f32 or bf16.
#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T, typename TP>
__global__ void snake_beta_kernel(T* y, const T* x, const TP* log_alpha, const TP* log_beta, int64_t C,
                                  int64_t L, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = (i / L) % C;
    const float alpha = expf(to_f(log_alpha[c]));
    const float inv_beta = 1.f / (expf(to_f(log_beta[c])) + 1e-9f);
    const float v = to_f(x[i]);
    const float s = sinf(v * alpha);
    y[i] = from_f<T>(v + inv_beta * (s * s));
  }
}

}  // namespace

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta) {
  LTX2_CHECK(x.dim() == 3, "snake_beta: [B, C, L] expected, got {}", x.str());
  const int64_t C = x.size(1), L = x.size(2);
  LTX2_CHECK(log_alpha.numel() == C && log_beta.numel() == C && log_alpha.dtype() == log_beta.dtype() &&
                 log_alpha.device() == x.device() && log_beta.device() == x.device(),
             "snake_beta: parameters {} and {} for {}", log_alpha.str(), log_beta.str(), x.str());
  use_device(x);
  Tensor xc = x.contiguous(), ac = log_alpha.contiguous(), bc = log_beta.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t total = y.numel();
  if (total == 0) return y;
  dispatch_float(x.dtype(), "snake_beta", [&](auto t) {
    using T = decltype(t);
    dispatch_float(ac.dtype(), "snake_beta parameters", [&](auto tp) {
      using TP = decltype(tp);
      snake_beta_kernel<T, TP><<<grid_for(total, kThreads), kThreads>>>(
          static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()),
          static_cast<const TP*>(ac.data_ptr()), static_cast<const TP*>(bc.data_ptr()), C, L, total);
      check_launch();
    });
  });
  return y;
}

}  // namespace ltx2::cuda
