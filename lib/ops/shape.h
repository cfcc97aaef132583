// Shape ops that copy: concatenation and constant padding.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ltx2::ops {

// Concatenates along dim (same dtype/device; other dims equal).
Tensor cat(const std::vector<Tensor>& parts, int dim);
// Pads dimension `dim` with `before` and `after` elements of `value`.
Tensor pad(const Tensor& x, int dim, int64_t before, int64_t after, float value = 0.f);

}  // namespace ltx2::ops
