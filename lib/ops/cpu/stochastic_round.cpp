// CPU fp8_cast_fuse_stochastic: ops/fp8_stochastic_rule.h element by element.
#include "ops/cpu/cpu_ops.h"
#include "ops/fp8_stochastic_rule.h"

namespace ltx2::ops::cpu {

Tensor fp8_cast_fuse_stochastic(const Tensor& weight, const Tensor& delta, uint64_t seed) {
  Tensor out = Tensor::empty(weight.shape(), DType::BF16);
  const auto* w = static_cast<const uint8_t*>(weight.data_ptr());
  const auto* d = static_cast<const uint16_t*>(delta.data_ptr());
  auto* o = static_cast<uint16_t*>(out.data_ptr());
  const int64_t n = weight.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i)
    o[i] = fp8_stochastic::fused_element(w[i], d[i],
                                         fp8_stochastic::centered_uniform(seed, static_cast<uint32_t>(i)));
  return out;
}

}  // namespace ltx2::ops::cpu
