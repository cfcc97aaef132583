#include "models/vocoder/anti_aliased_snake.h"

#include "ops/resample1d.h"
#include "ops/snake.h"

namespace ltx2::vocoder {

namespace {
// Activation1d's fixed resampling: ratio 2 both ways with 12-tap filters.
constexpr int64_t kRatio = 2;
constexpr int64_t kTaps = 12;
}  // namespace

AntiAliasedSnakeBeta::AntiAliasedSnakeBeta(const WeightView& weights, int64_t channels)
    : log_alpha_(weights.load("act.alpha", {channels})),
      log_beta_(weights.load("act.beta", {channels})),
      up_filter_(weights.load("upsample.filter", {1, 1, kTaps}).view({kTaps})),
      down_filter_(weights.load("downsample.lowpass.filter", {1, 1, kTaps}).view({kTaps})) {}

Tensor AntiAliasedSnakeBeta::forward(const Tensor& x) const {
  // UpSample1d: replicate-pad K/r - 1 samples, and crop back to exactly r * L.
  const int64_t pad = kTaps / kRatio - 1;
  const int64_t crop_left = pad * kRatio + (kTaps - kRatio) / 2;
  const int64_t crop_right = pad * kRatio + (kTaps - kRatio + 1) / 2;
  Tensor up = ops::upsample1d(x, up_filter_, kRatio, pad, crop_left, crop_right);
  Tensor act = ops::snake_beta(up, log_alpha_, log_beta_);
  // LowPassFilter1d for an even kernel: K/2 - 1 samples before, K/2 after.
  return ops::lowpass_downsample1d(act, down_filter_, kRatio, kTaps / 2 - 1, kTaps / 2);
}

}  // namespace ltx2::vocoder
