// Per-channel latent statistics: loading and (un)normalisation.
#include "models/video_vae/latent_stats.h"

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::video_vae {

LatentStatistics::LatentStatistics(Tensor mean, Tensor std) {
  LTX2_CHECK(mean.dim() == 1 && std.shape() == mean.shape(),
             "latent statistics: mean {} and std {} must be equal 1-d vectors", mean.str(), std.str());
  const Shape bc = {1, mean.numel(), 1, 1, 1};
  mean_ = mean.contiguous().view(bc);
  std_ = std.contiguous().view(bc);
}

LatentStatistics::LatentStatistics(const WeightView& stats, int64_t channels)
    : LatentStatistics(stats.load("mean-of-means", {channels}), stats.load("std-of-means", {channels})) {}

Tensor LatentStatistics::normalize(const Tensor& x) const {
  LTX2_CHECK(x.dim() == 5 && x.size(1) == channels(), "latent statistics: latent {} for {} channels", x.str(),
             channels());
  return ops::div(ops::sub(x, mean_), std_);
}

Tensor LatentStatistics::un_normalize(const Tensor& x) const {
  LTX2_CHECK(x.dim() == 5 && x.size(1) == channels(), "latent statistics: latent {} for {} channels", x.str(),
             channels());
  return ops::add(ops::mul(x, std_), mean_);
}

}  // namespace ltx2::video_vae
