// LatentUpsampler: spatial x2 (per-frame conv + pixel shuffle) or the rational resampler (per-frame
// conv to num²·mid channels, pixel shuffle by num, 5x5 binomial blur with stride den), wrapped in
// Conv3d + GroupNorm residual stages. It works on UN-normalized latents; upsample_video() applies
// the video VAE's per-channel statistics around it as the pipeline does.
// Keys (bare, the upsampler's own file): initial_conv, initial_norm, res_blocks.{i}.{conv1,norm1,
// conv2,norm2}, upsampler.0 (x2) or upsampler.conv + upsampler.blur_down.kernel (rational),
// post_upsample_res_blocks.{i}, final_conv.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/upsampler_config.h"
#include "io/weights.h"
#include "models/video_vae/latent_stats.h"
#include "models/video_vae/trace.h"

namespace ltx2::upsampler {

class LatentUpsampler {
 public:
  // The model lands where `weights` is placed (WeightView::placed).
  LatentUpsampler(const UpsamplerConfig& config, const WeightView& weights);
  // Config from the file's top-level metadata config; bare keys; every weight as `dtype` on `device`.
  static LatentUpsampler from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype = DType::F32,
                                      Device device = Device::cpu());

  // Un-normalized latent [B, C, F, H, W] (any device, any float dtype; brought to the model's first)
  // -> [B, C, F, H*num/den, W*num/den] on the model's device, in its dtype.
  Tensor forward(const Tensor& latent, const video_vae::Trace& trace = {}) const;
  const UpsamplerConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  struct Conv {
    Tensor weight, bias;  // weight [Cout, Cin, kD, 3, 3] (2-D convs get kD = 1)
  };
  struct ResBlock {
    Conv conv1, conv2;
    Tensor norm1_w, norm1_b, norm2_w, norm2_b;
  };
  Conv load_conv3d(const WeightView& w, const std::string& name, int64_t out, int64_t in) const;
  Conv load_conv2d(const WeightView& w, const std::string& name, int64_t out, int64_t in) const;
  ResBlock load_res_block(const WeightView& w) const;
  Tensor conv(const Conv& c, const Tensor& x) const;
  Tensor norm(const Tensor& x, const Tensor& w, const Tensor& b) const;
  Tensor res_block(const ResBlock& r, const Tensor& x) const;
  Tensor upsample(const Tensor& x, const video_vae::Trace& trace) const;

  UpsamplerConfig config_;
  DType dtype_;
  Device device_;
  Conv initial_conv_, final_conv_, upsampler_conv_;
  Tensor initial_norm_w_, initial_norm_b_;
  std::vector<ResBlock> res_blocks_, post_res_blocks_;
  Tensor blur_kernel_;  // [1, 1, 1, 5, 5], rational resampler with den > 1
};

// normalize(upsampler(un_normalize(latent))) with the video VAE's statistics (on the upsampler's
// device; the latent is brought there and to the upsampler's dtype first).
Tensor upsample_video(const LatentUpsampler& upsampler, const Tensor& latent,
                      const video_vae::LatentStatistics& stats);

}  // namespace ltx2::upsampler
