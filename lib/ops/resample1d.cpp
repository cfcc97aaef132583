// Filtered resampling (ops/resample1d.h): dispatch to the CUDA table or the CPU kernels.
#include "ops/resample1d.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right) {
  LTX2_DISPATCH_CUDA(x.device(), upsample1d, x, filter, ratio, pad, crop_left, crop_right);
  return cpu::upsample1d(x, filter, ratio, pad, crop_left, crop_right);
}

Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right) {
  LTX2_DISPATCH_CUDA(x.device(), lowpass_downsample1d, x, filter, stride, pad_left, pad_right);
  return cpu::lowpass_downsample1d(x, filter, stride, pad_left, pad_right);
}

}  // namespace ltx2::ops
