// Reductions over one dimension, and softmax. Float32 on the CPU (sums accumulate in double so that
// long reductions stay within the fixtures' tolerances).
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

enum class ReduceOp : int { Sum, Mean, Max, Min };

Tensor reduce(const Tensor& x, int dim, bool keepdim, ReduceOp op);
inline Tensor sum(const Tensor& x, int dim, bool keepdim = false) { return reduce(x, dim, keepdim, ReduceOp::Sum); }
inline Tensor mean(const Tensor& x, int dim, bool keepdim = false) { return reduce(x, dim, keepdim, ReduceOp::Mean); }
inline Tensor amax(const Tensor& x, int dim, bool keepdim = false) { return reduce(x, dim, keepdim, ReduceOp::Max); }

// Softmax over the last dimension (max-subtracted, float32).
Tensor softmax(const Tensor& x);

}  // namespace ltx2::ops
