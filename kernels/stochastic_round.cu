// CUDA fp8_cast_fuse_stochastic (ops/stochastic_round.h): one thread per element, the rule of
// ops/fp8_stochastic_rule.h, so the bits equal the CPU's.
#include "kernels/common.cuh"
#include "ops/fp8_stochastic_rule.h"

namespace ltx2::cuda {

namespace {

__global__ void fp8_cast_fuse_kernel(const uint8_t* w, const uint16_t* d, uint16_t* out, int64_t n,
                                     uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = ops::fp8_stochastic::fused_element(
        w[i], d[i], ops::fp8_stochastic::centered_uniform(seed, static_cast<uint32_t>(i)));
}

}  // namespace

Tensor fp8_cast_fuse_stochastic(const Tensor& weight, const Tensor& delta, int64_t seed) {
  use_device(weight);
  Tensor out = Tensor::empty(weight.shape(), DType::BF16, weight.device());
  const int64_t n = weight.numel();
  if (n == 0) return out;
  fp8_cast_fuse_kernel<<<grid_for(n, 256), 256>>>(
      static_cast<const uint8_t*>(weight.data_ptr()), static_cast<const uint16_t*>(delta.data_ptr()),
      static_cast<uint16_t*>(out.data_ptr()), n, static_cast<uint64_t>(seed));
  check_launch();
  return out;
}

}  // namespace ltx2::cuda
