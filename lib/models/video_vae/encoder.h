// VideoEncoder of LTX-2: video [B, 3, F, H, W] in [-1, 1] -> normalized latent means
// [B, C, 1 + (F-1)/t, H/s, W/s]. Frames beyond the last 1 + t*k are dropped, as the reference
// does. Every conv is causal, so encoding the first frame alone (image conditioning) gives the
// first latent frame of the whole video's encoding.
// Forward: patchify, conv_in, encoder_blocks in order, PixelNorm, SiLU, conv_out, keep the C
// means (drop the log-variance channels), normalize.
#pragma once

#include <memory>
#include <variant>
#include <vector>

#include "io/configs/video_vae_config.h"
#include "io/weights.h"
#include "models/video_vae/latent_stats.h"
#include "models/video_vae/resnet.h"
#include "models/video_vae/sampling.h"
#include "models/video_vae/trace.h"

namespace ltx2::video_vae {

class VideoEncoder {
 public:
  // The model lands where `encoder` is placed (WeightView::placed).
  VideoEncoder(const VideoEncoderConfig& config, const WeightView& encoder, const WeightView& stats);
  static VideoEncoder from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype = DType::F32,
                                   Device device = Device::cpu());

  // The video (any device, any float dtype) is brought to the encoder's device and dtype first; the
  // latent comes back there, in the encoder's dtype.
  Tensor encode(const Tensor& video, const Trace& trace = {}) const;
  // One image [B, 3, H, W] (or a single-frame video) -> its latent frame [B, C, 1, H/s, W/s].
  Tensor encode_image(const Tensor& image) const;

  const VideoEncoderConfig& config() const { return config_; }
  const LatentStatistics& statistics() const { return stats_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  using Block = std::variant<MidBlock3D, SpaceToDepthDownsample>;
  VideoEncoderConfig config_;
  DType dtype_;
  Device device_;
  LatentStatistics stats_;
  CausalConv3d conv_in_, conv_out_;
  std::vector<Block> blocks_;
};

}  // namespace ltx2::video_vae
