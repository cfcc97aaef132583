// upsample_nearest2d (ops/upsample_nearest.h): dispatch to the CUDA table or the CPU kernel.
#include "ops/upsample_nearest.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor upsample_nearest2d(const Tensor& x, int64_t factor) {
  LTX2_DISPATCH_CUDA(x.device(), upsample_nearest2d, x, factor);
  return cpu::upsample_nearest2d(x, factor);
}

}  // namespace ltx2::ops
