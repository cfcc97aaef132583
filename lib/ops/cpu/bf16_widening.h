// bf16 operands of the CPU ops. The CPU kernels compute in float32 only; an op given any bf16
// operand computes on their float32 widening and rounds its result to the dtype the CUDA kernel
// would give (bf16 unless a float32 operand promotes it, as the GPU's binary ops do). A model
// placed as bf16 on the CPU therefore rounds after every op: the naive bf16 computation the GPU
// bf16 results are judged against (tests/unit/gpu/gpu_compare.h).
#pragma once

#include <initializer_list>

#include "core/tensor.h"

namespace ltx2::ops::cpu {

inline bool any_bf16(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->defined() && t->dtype() == DType::BF16) return true;
  return false;
}

// bf16 -> float32; anything else (undefined included) as it is.
inline Tensor widen(const Tensor& t) {
  return t.defined() && t.dtype() == DType::BF16 ? t.to(DType::F32) : t;
}

}  // namespace ltx2::ops::cpu
