// The audio VAE decoder: a normalised latent [B, z, T, F] -> stereo log-mel [B, out_ch, 4T-3, mel]
// (causal time axis). Un-normalisation with the per-channel statistics on the (channel, frequency)
// flattened features, conv_in, a mid block of two ResnetBlocks, then per level (deepest first)
// num_res_blocks + 1 ResnetBlocks and, above level 0, a nearest x2 upsampling with a causal conv;
// finally PixelNorm, SiLU, conv_out and a crop / zero-pad to the target shape.
// Weights: audio_vae.decoder.* and audio_vae.per_channel_statistics.{std,mean}-of-means.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/configs/audio_vae_config.h"
#include "io/weights.h"
#include "models/audio_vae/causal_conv2d.h"

namespace ltx2::audio_vae {

// Receives named intermediate tensors during a forward pass (for parity checks).
using Probe = std::function<void(const std::string& name, const Tensor& value)>;

// PixelNorm (eps 1e-6) -> SiLU -> conv, twice, plus a 1x1 `nin_shortcut` when channels change.
class ResnetBlock {
 public:
  ResnetBlock(const WeightView& weights, int64_t in_channels, int64_t out_channels, CausalityAxis axis);
  Tensor forward(const Tensor& x) const;

 private:
  CausalConv2d conv1_, conv2_, shortcut_;
  bool has_shortcut_ = false;
};

class AudioDecoder {
 public:
  // `decoder`: window on audio_vae.decoder.; `stats`: on audio_vae.per_channel_statistics. The
  // model (statistics included) lands where `decoder` is placed (WeightView::placed).
  AudioDecoder(AudioVaeDecoderConfig config, const WeightView& decoder, const WeightView& stats);
  // Both windows from a weight set with the monolith's prefixes; every weight as `dtype` on `device`.
  static AudioDecoder load(const AudioVaeDecoderConfig& config, std::shared_ptr<const WeightSet> weights,
                           DType dtype = DType::F32, Device device = Device::cpu());

  // latent [B, z_channels, T, F] (normalised, as the transformer produces it; any device and float
  // dtype, brought to the model's first) -> [B, out_ch, T', M] on the model's device in its dtype,
  // with T' = max(4T - 3, 1) (4T when not causal in time) and M = mel_bins (F when unset).
  Tensor forward(const Tensor& latent, const Probe& probe = {}) const;

  const AudioVaeDecoderConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

 private:
  struct Level {
    std::vector<ResnetBlock> blocks;
    CausalConv2d upsample;  // unused on level 0
  };

  Tensor un_normalize(const Tensor& latent) const;
  Tensor upsample(const Level& level, const Tensor& x) const;

  AudioVaeDecoderConfig config_;
  DType dtype_;
  Device device_;
  Tensor stats_std_, stats_mean_;
  CausalConv2d conv_in_, conv_out_;
  std::vector<ResnetBlock> mid_;
  std::vector<Level> levels_;  // index = level (0 = finest)
};

}  // namespace ltx2::audio_vae
