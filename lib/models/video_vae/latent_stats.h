// Per-channel latent statistics (keys per_channel_statistics.{mean-of-means, std-of-means} [C],
// shared by encoder, decoder and the upsampler's caller). The transformer works on normalized
// latents: normalize(x) = (x - mean) / std, un_normalize(x) = x * std + mean, per channel of
// [B, C, F, H, W].
#pragma once

#include "core/tensor.h"
#include "io/weights.h"

namespace ltx2::video_vae {

class LatentStatistics {
 public:
  LatentStatistics() = default;
  LatentStatistics(Tensor mean, Tensor std);
  // `stats`: a view over the statistics prefix (component_prefixes(Component::VideoStats)).
  LatentStatistics(const WeightView& stats, int64_t channels);

  Tensor normalize(const Tensor& x) const;
  Tensor un_normalize(const Tensor& x) const;
  int64_t channels() const { return mean_.numel(); }

 private:
  Tensor mean_, std_;  // [1, C, 1, 1, 1]
};

}  // namespace ltx2::video_vae
