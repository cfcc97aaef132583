// Snake-Beta activation of BigVGAN v2 over [B, C, L]: y = x + sin²(α x) / (β + 1e-9) with
// per-channel α = exp(log_alpha[c]), β = exp(log_beta[c]) (the checkpoint stores them log-scaled).
// CPU: float32.
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

Tensor snake_beta(const Tensor& x, const Tensor& log_alpha, const Tensor& log_beta);

}  // namespace ltx2::ops
