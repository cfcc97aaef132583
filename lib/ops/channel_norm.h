// Normalisations over the channel dimension (dim 1) of [B, C, ...] tensors, as the video VAE and
// the latent upsampler use them. Statistics in float32.
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

// PixelNorm: x / sqrt(mean_c(x²) + eps) at every (b, spatial position); no affine parameters.
Tensor pixel_norm(const Tensor& x, float eps);

// GroupNorm: channels split into `groups` runs of consecutive channels; each (b, group) is
// normalised over its channels and all positions with the biased variance, then
// y = x̂ * w[c] + b[c] (w, b [C] or undefined).
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps);

}  // namespace ltx2::ops
