// The channel normalisations (ops/channel_norm.h): dispatch to the CUDA table or the CPU kernels.
#include "ops/channel_norm.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor pixel_norm(const Tensor& x, float eps) {
  LTX2_DISPATCH_CUDA(x.device(), pixel_norm, x, eps);
  return cpu::pixel_norm(x, eps);
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps) {
  LTX2_DISPATCH_CUDA(x.device(), group_norm, x, groups, w, b, eps);
  return cpu::group_norm(x, groups, w, b, eps);
}

}  // namespace ltx2::ops
