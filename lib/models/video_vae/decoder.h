// ConvVideoDecoder of LTX-2 (2.0 and 2.3 layouts, optional timestep conditioning): normalized
// latent [B, C, F, H, W] -> video [B, 3, 1 + t(F-1), H*s, W*s] (t, s from the config; 8 and 32 for
// the real models), nominally in [-1, 1] and not clamped.
// Forward: un_normalize, conv_in, the blocks of decoder_blocks in reverse order, PixelNorm
// (+ final AdaLN when conditioned), SiLU, conv_out, unpatchify.
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

// The pipeline's defaults for timestep-conditioned decoders.
constexpr float kDefaultDecodeTimestep = 0.05f;
constexpr float kDecodeNoiseScale = 0.025f;

// noise * scale + (1 - scale) * latent: the decode-noise mix a conditioned decoder expects its
// caller to apply (with noise drawn from the caller's generator).
Tensor mix_decode_noise(const Tensor& latent, const Tensor& noise, float scale = kDecodeNoiseScale);

class VideoDecoder {
 public:
  // `decoder`: view over the decoder's keys; `stats`: over the per-channel statistics. The model
  // lands where `decoder` is placed (WeightView::placed), except the float32 0-d timestep scale.
  VideoDecoder(const VideoDecoderConfig& config, const WeightView& decoder, const WeightView& stats);
  // Config from the set's metadata config["vae"]; keys under the layout's decoder prefixes; every
  // weight as `dtype` on `device`.
  static VideoDecoder from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype = DType::F32,
                                   Device device = Device::cpu());

  // timestep [B] or a scalar: required when the config is timestep conditioned, refused otherwise.
  // The latent (any device, any float dtype) is brought to the decoder's device and dtype first, the
  // timestep to its device in float32; the video comes back there, in the decoder's dtype.
  Tensor decode(const Tensor& latent, const Tensor& timestep = {}, const Trace& trace = {}) const;

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  const VideoDecoderConfig& config() const { return config_; }
  const LatentStatistics& statistics() const { return stats_; }

 private:
  using Block = std::variant<MidBlock3D, DepthToSpaceUpsample>;
  VideoDecoderConfig config_;
  DType dtype_;
  Device device_;
  LatentStatistics stats_;
  CausalConv3d conv_in_, conv_out_;
  std::vector<Block> blocks_;         // execution order (reversed decoder_blocks)
  Tensor timestep_scale_multiplier_;  // 0-d, conditioned only
  TimestepEmbedder last_time_embedder_;
  Tensor last_scale_shift_table_;  // [2, C], conditioned only
};

}  // namespace ltx2::video_vae
