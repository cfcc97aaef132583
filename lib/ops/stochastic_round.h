// fp8-cast's LoRA fuse with stochastic rounding, as the reference runs it on CUDA (its Triton
// kernel, seed 0): the rule of ops/fp8_stochastic_rule.h for every element of a weight.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::ops {

// weight: F8_E4M3; delta: bf16 of its shape (the LoRAs' bf16 sum); both on one device. Returns the
// rule's bf16 result for every element (its index the flat position, below 2^31), which the caller
// casts to F8_E4M3. The CPU and the CUDA kernel give the same bits.
Tensor fp8_cast_fuse_stochastic(const Tensor& weight, const Tensor& delta, uint64_t seed);

}  // namespace ltx2::ops
