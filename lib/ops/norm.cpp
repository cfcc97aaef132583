// The last-dimension normalisations (ops/norm.h): dispatch to the CUDA table or the CPU kernels.
#include "ops/norm.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  LTX2_DISPATCH_CUDA(x.device(), rms_norm, x, w, eps);
  return cpu::rms_norm(x, w, eps);
}

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
  LTX2_DISPATCH_CUDA(x.device(), layer_norm, x, w, b, eps);
  return cpu::layer_norm(x, w, b, eps);
}

}  // namespace ltx2::ops
