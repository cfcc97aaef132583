// VideoEncoder construction from config + weights, and its forward pass.
#include "models/video_vae/encoder.h"

#include "core/error.h"
#include "io/layout.h"
#include "models/video_vae/patchify.h"
#include "ops/channel_norm.h"
#include "ops/elementwise.h"

namespace ltx2::video_vae {

namespace {
constexpr bool kCausal = true;  // the encoder always pads causally
}  // namespace

VideoEncoder::VideoEncoder(const VideoEncoderConfig& config, const WeightView& encoder,
                           const WeightView& stats)
    : config_(config),
      dtype_(encoder.dtype()),
      device_(encoder.device()),
      stats_(stats.placed(encoder.dtype(), encoder.device()), config.latent_channels) {
  const SpatialPadding pad = config.spatial_padding;
  const int64_t p = config.patch_size;
  int64_t channels = config.latent_channels;
  conv_in_ = CausalConv3d(encoder, "conv_in", config.in_channels * p * p, channels, pad);
  for (size_t i = 0; i < config.blocks.size(); ++i) {
    const VideoVaeBlock& b = config.blocks[i];
    const WeightView w = encoder.sub("down_blocks." + std::to_string(i) + ".");
    if (b.kind == VideoBlockKind::ResX) {
      blocks_.emplace_back(std::in_place_type<MidBlock3D>, w, channels, b.num_layers, pad, false);
    } else {
      SpaceToDepthDownsample down(w, channels, b, pad);
      channels = down.out_channels();
      blocks_.emplace_back(std::move(down));
    }
  }
  conv_out_ = CausalConv3d(encoder, "conv_out", channels, config.conv_out_channels(), pad);
}

VideoEncoder VideoEncoder::from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype,
                                        Device device) {
  return VideoEncoder(
      VideoEncoderConfig::from_metadata(set->config()),
      WeightView(set, component_prefixes(Component::VideoEncoder), "video VAE encoder").placed(dtype, device),
      WeightView(set, component_prefixes(Component::VideoStats), "video VAE statistics"));
}

Tensor VideoEncoder::encode(const Tensor& video, const Trace& trace) const {
  LTX2_CHECK(video.dim() == 5 && video.size(1) == config_.in_channels && video.size(2) >= 1,
             "video VAE encoder: video {} must be [B, {}, F, H, W]", video.str(), config_.in_channels);
  const VideoScaleFactors f = config_.scale_factors();
  LTX2_CHECK(video.size(3) % f.height == 0 && video.size(4) % f.width == 0,
             "video VAE encoder: frame size {}x{} is not a multiple of {}x{}", video.size(3), video.size(4),
             f.height, f.width);
  auto note = [&](const std::string& name, const Tensor& t) {
    if (trace) trace(name, t);
  };
  const int64_t frames = 1 + (video.size(2) - 1) / f.time * f.time;
  Tensor x = patchify(video.slice(2, 0, frames).to(device_).to(dtype_), config_.patch_size);
  x = conv_in_.forward(x, kCausal);
  note("conv_in", x);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (const auto* mid = std::get_if<MidBlock3D>(&blocks_[i]))
      x = mid->forward(x, kCausal, Tensor());
    else
      x = std::get<SpaceToDepthDownsample>(blocks_[i]).forward(x, kCausal);
    note("down_block_" + std::to_string(i), x);
  }
  x = ops::pixel_norm(x, kPixelNormEps);
  note("norm_out", x);
  x = conv_out_.forward(ops::silu(x), kCausal);
  note("conv_out", x);
  return stats_.normalize(x.slice(1, 0, config_.latent_channels).contiguous());
}

Tensor VideoEncoder::encode_image(const Tensor& image) const {
  if (image.dim() == 4) return encode(image.unsqueeze(2));
  LTX2_CHECK(image.dim() == 5, "video VAE encoder: image {} must be [B, 3, H, W]", image.str());
  return encode(image.slice(2, 0, 1));
}

}  // namespace ltx2::video_vae
