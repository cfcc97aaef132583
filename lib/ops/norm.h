// Normalisations over the last dimension. Statistics in float32 as the reference computes them.
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

// x * rsqrt(mean(x², -1) + eps) * w; w [C] or undefined (no affine).
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);
// (x - mean) * rsqrt(var + eps) * w + b over the last dim; w, b [C] or undefined. Biased variance.
Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps);

}  // namespace ltx2::ops
