// ConvVideoDecoder construction from config + weights, and its forward pass.
#include "models/video_vae/decoder.h"

#include "core/error.h"
#include "io/layout.h"
#include "models/video_vae/patchify.h"
#include "ops/channel_norm.h"
#include "ops/elementwise.h"

namespace ltx2::video_vae {

Tensor mix_decode_noise(const Tensor& latent, const Tensor& noise, float scale) {
  return ops::add(ops::mul(noise, scale), ops::mul(latent, 1.f - scale));
}

VideoDecoder::VideoDecoder(const VideoDecoderConfig& config, const WeightView& decoder,
                           const WeightView& stats)
    : config_(config),
      dtype_(decoder.dtype()),
      device_(decoder.device()),
      stats_(stats.placed(decoder.dtype(), decoder.device()), config.latent_channels) {
  const SpatialPadding pad = config.spatial_padding;
  const bool tc = config.timestep_conditioning;
  int64_t channels = config.feature_channels();
  conv_in_ = CausalConv3d(decoder, "conv_in", config.latent_channels, channels, pad);
  for (size_t i = 0; i < config.blocks.size(); ++i) {
    const VideoVaeBlock& b = config.blocks[config.blocks.size() - 1 - i];
    const WeightView w = decoder.sub("up_blocks." + std::to_string(i) + ".");
    if (b.kind == VideoBlockKind::ResX) {
      blocks_.emplace_back(std::in_place_type<MidBlock3D>, w, channels, b.num_layers, pad, tc);
    } else {
      DepthToSpaceUpsample up(w, channels, b, pad);
      channels = up.out_channels();
      blocks_.emplace_back(std::move(up));
    }
  }
  LTX2_CHECK(channels == config.base_channels,
             "{}: decoder blocks end at {} channels, decoder_base_channels is {}", decoder.component(),
             channels, config.base_channels);
  const int64_t p = config.patch_size;
  conv_out_ = CausalConv3d(decoder, "conv_out", channels, config.out_channels * p * p, pad);
  if (tc) {
    // The reference keeps float32 0-d scalars in float32 whatever the build dtype.
    timestep_scale_multiplier_ = decoder.load("timestep_scale_multiplier", Shape{}, DType::F32, device_);
    last_time_embedder_ = TimestepEmbedder(decoder, "last_time_embedder", 2 * channels);
    last_scale_shift_table_ = decoder.load("last_scale_shift_table", {2, channels});
  }
}

VideoDecoder VideoDecoder::from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype,
                                        Device device) {
  return VideoDecoder(
      VideoDecoderConfig::from_metadata(set->config()),
      WeightView(set, component_prefixes(Component::VideoDecoder), "video VAE decoder").placed(dtype, device),
      WeightView(set, component_prefixes(Component::VideoStats), "video VAE statistics"));
}

Tensor VideoDecoder::decode(const Tensor& latent, const Tensor& timestep, const Trace& trace) const {
  LTX2_CHECK(latent.dim() == 5 && latent.size(1) == config_.latent_channels,
             "video VAE decoder: latent {} must be [B, {}, F, H, W]", latent.str(), config_.latent_channels);
  const bool tc = config_.timestep_conditioning;
  LTX2_CHECK(
      tc == timestep.defined(), "video VAE decoder: {}",
      tc ? "this decoder is timestep conditioned and needs a timestep" : "this decoder takes no timestep");
  Tensor scaled_t;
  if (tc) {
    const int64_t B = latent.size(0);
    LTX2_CHECK(timestep.numel() == 1 || timestep.numel() == B, "video VAE decoder: timestep {} for batch {}",
               timestep.str(), B);
    const Tensor t = timestep.to(device_).to(DType::F32).contiguous();
    scaled_t = ops::mul(t.view({t.numel()}).expand({B}).contiguous(), timestep_scale_multiplier_);
  }
  auto note = [&](const std::string& name, const Tensor& t) {
    if (trace) trace(name, t);
  };
  Tensor x = stats_.un_normalize(latent.to(device_).to(dtype_));
  note("latent_unnormalized", x);
  x = conv_in_.forward(x, config_.causal);
  note("conv_in", x);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const std::string name = "up_block_" + std::to_string(i);
    if (const auto* mid = std::get_if<MidBlock3D>(&blocks_[i])) {
      Tensor embedding;
      x = mid->forward(x, config_.causal, scaled_t, trace ? &embedding : nullptr);
      if (embedding.defined()) note(name + "_time_embedder", embedding);
    } else {
      x = std::get<DepthToSpaceUpsample>(blocks_[i]).forward(x, config_.causal);
    }
    note(name, x);
  }
  x = ops::pixel_norm(x, kPixelNormEps);
  note("norm_out", x);
  if (tc) {
    Tensor e = last_time_embedder_.forward(scaled_t);
    note("last_time_embedder", e);
    const int64_t C = x.size(1);
    Tensor ada = ops::add(e.view({e.size(0), 2, C}), last_scale_shift_table_);
    x = modulate(x, ada.select(1, 0), ada.select(1, 1));
  }
  x = conv_out_.forward(ops::silu(x), config_.causal);
  return unpatchify(x, config_.patch_size);
}

}  // namespace ltx2::video_vae
