// snake_beta (ops/snake.h): dispatch to the CUDA table or the CPU kernel.
#include "ops/snake.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta) {
  LTX2_DISPATCH_CUDA(x.device(), snake_beta, x, log_alpha, log_beta);
  return cpu::snake_beta(x, log_alpha, log_beta);
}

}  // namespace ltx2::ops
