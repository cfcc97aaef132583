// Reductions and softmax (ops/reduce.h): dispatch to the CUDA table or the CPU kernels.
#include "ops/reduce.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor reduce(const Tensor& x, int dim, bool keepdim, ReduceOp op) {
  LTX2_DISPATCH_CUDA(x.device(), reduce, x, dim, keepdim, static_cast<int>(op));
  return cpu::reduce(x, dim, keepdim, op);
}

Tensor softmax(const Tensor& x) {
  LTX2_DISPATCH_CUDA(x.device(), softmax, x);
  return cpu::softmax(x);
}

}  // namespace ltx2::ops
