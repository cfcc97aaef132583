// conv3d (ops/conv3d.h): dispatch to the CUDA table or the CPU kernel.
#include "ops/conv3d.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& params) {
  LTX2_DISPATCH_CUDA(x.device(), conv3d, x, w, bias, params);
  return cpu::conv3d(x, w, bias, params);
}

}  // namespace ltx2::ops
