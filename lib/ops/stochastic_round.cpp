// fp8_cast_fuse_stochastic (ops/stochastic_round.h): the shared checks, then the CUDA kernel or the
// CPU loop over ops/fp8_stochastic_rule.h.
#include "ops/stochastic_round.h"

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Tensor fp8_cast_fuse_stochastic(const Tensor& weight, const Tensor& delta, uint64_t seed) {
  LTX2_CHECK(
      weight.dtype() == DType::F8E4M3 && delta.dtype() == DType::BF16 && weight.shape() == delta.shape(),
      "fp8_cast_fuse_stochastic: an F8_E4M3 weight and a bf16 delta of its shape, got {} and {}",
      weight.str(), delta.str());
  LTX2_CHECK(weight.device() == delta.device(), "fp8_cast_fuse_stochastic: weight on {}, delta on {}",
             weight.device().str(), delta.device().str());
  LTX2_CHECK(weight.numel() < (int64_t{1} << 31),
             "fp8_cast_fuse_stochastic: {} elements, more than the 32-bit indices of the reference's kernel",
             weight.numel());
  LTX2_DISPATCH_CUDA(weight.device(), fp8_cast_fuse_stochastic, weight.contiguous(), delta.contiguous(),
                     static_cast<int64_t>(seed));
  return cpu::fp8_cast_fuse_stochastic(weight.contiguous(), delta.contiguous(), seed);
}

}  // namespace ltx2::ops
