// conv2d (ops/conv2d.h): dispatch to the CUDA table or the CPU kernel.
#include "ops/conv2d.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dPadding& pad) {
  LTX2_DISPATCH_CUDA(x.device(), conv2d, x, w, bias, pad);
  return cpu::conv2d(x, w, bias, pad);
}

}  // namespace ltx2::ops
