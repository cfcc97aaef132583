// decoded_to_rgb8 (ops/rgb8.h): dispatch to the CUDA table or the CPU kernel.
#include "ops/rgb8.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor decoded_to_rgb8(const Tensor& video) {
  LTX2_DISPATCH_CUDA(video.device(), decoded_to_rgb8, video);
  return cpu::decoded_to_rgb8(video);
}

}  // namespace ltx2::ops
