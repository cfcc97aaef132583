// BigVGAN v2's anti-aliased activation (Activation1d around SnakeBeta), per channel of [B, C, L]:
// x2 upsampling with the stored kaiser-sinc filter, Snake-Beta, then low-pass x2 decimation.
// Keys under its window: act.alpha [C], act.beta [C] (log-scale), upsample.filter [1, 1, 12],
// downsample.lowpass.filter [1, 1, 12].
#pragma once

#include "core/tensor.h"
#include "io/weights.h"

namespace ltx2::vocoder {

class AntiAliasedSnakeBeta {
 public:
  AntiAliasedSnakeBeta(const WeightView& weights, int64_t channels);
  // [B, C, L] -> [B, C, L].
  Tensor forward(const Tensor& x) const;

 private:
  Tensor log_alpha_, log_beta_, up_filter_, down_filter_;
};

}  // namespace ltx2::vocoder
