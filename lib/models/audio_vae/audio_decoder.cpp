#include "models/audio_vae/audio_decoder.h"

#include <algorithm>

#include "core/error.h"
#include "io/layout.h"
#include "ops/channel_norm.h"
#include "ops/elementwise.h"
#include "ops/upsample_nearest.h"

namespace ltx2::audio_vae {

namespace {

constexpr float kPixelNormEps = 1e-6f;

// x / sqrt(mean over channels of x² + eps) at every (b, t, m).
Tensor pixel_norm(const Tensor& x) {
  return ops::pixel_norm(x, kPixelNormEps);
}

Tensor norm_silu(const Tensor& x) {
  return ops::silu(pixel_norm(x));
}

}  // namespace

ResnetBlock::ResnetBlock(const WeightView& weights, int64_t in_channels, int64_t out_channels,
                         CausalityAxis axis)
    : conv1_(weights, "conv1", in_channels, out_channels, 3, axis),
      conv2_(weights, "conv2", out_channels, out_channels, 3, axis),
      has_shortcut_(in_channels != out_channels) {
  if (has_shortcut_) shortcut_ = CausalConv2d(weights, "nin_shortcut", in_channels, out_channels, 1, axis);
}

Tensor ResnetBlock::forward(const Tensor& x) const {
  Tensor h = conv1_.forward(norm_silu(x));
  h = conv2_.forward(norm_silu(h));
  return ops::add(has_shortcut_ ? shortcut_.forward(x) : x, h);
}

AudioDecoder::AudioDecoder(AudioVaeDecoderConfig config, const WeightView& decoder, const WeightView& stats)
    : config_(std::move(config)), dtype_(decoder.dtype()), device_(decoder.device()) {
  const auto& c = config_;
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  int64_t width = c.ch * c.ch_mult.back();
  // The reference sizes the statistics by `ch` (= z_channels x latent mel bins in LTX-2).
  stats_std_ = stats.load("std-of-means", {c.ch}, dtype_, device_);
  stats_mean_ = stats.load("mean-of-means", {c.ch}, dtype_, device_);
  conv_in_ = CausalConv2d(decoder, "conv_in", c.z_channels, width, 3, c.causality);
  mid_.emplace_back(decoder.sub("mid.block_1."), width, width, c.causality);
  mid_.emplace_back(decoder.sub("mid.block_2."), width, width, c.causality);
  levels_.resize(levels);
  for (int64_t l = levels - 1; l >= 0; --l) {
    const WeightView stage = decoder.sub("up." + std::to_string(l) + ".");
    const int64_t out = c.ch * c.ch_mult[l];
    for (int64_t i = 0; i <= c.num_res_blocks; ++i) {
      levels_[l].blocks.emplace_back(stage.sub("block." + std::to_string(i) + "."), width, out, c.causality);
      width = out;
    }
    if (l != 0) levels_[l].upsample = CausalConv2d(stage, "upsample.conv", width, width, 3, c.causality);
  }
  conv_out_ = CausalConv2d(decoder, "conv_out", width, c.out_ch, 3, c.causality);
}

AudioDecoder AudioDecoder::load(const AudioVaeDecoderConfig& config, std::shared_ptr<const WeightSet> weights,
                                DType dtype, Device device) {
  const WeightView decoder =
      WeightView(weights, component_prefixes(Component::AudioDecoder), "audio VAE decoder")
          .placed(dtype, device);
  WeightView stats(weights, component_prefixes(Component::AudioStats), "audio VAE statistics");
  return AudioDecoder(config, decoder, stats);
}

Tensor AudioDecoder::un_normalize(const Tensor& latent) const {
  const int64_t B = latent.size(0), C = latent.size(1), T = latent.size(2), F = latent.size(3);
  LTX2_CHECK(C * F == stats_std_.numel(),
             "audio VAE decoder: latent {} has {} (channel, frequency) features; the statistics have {}",
             latent.str(), C * F, stats_std_.numel());
  // [B, C, T, F] -> [B, T, C*F] (feature c * F + f), x * std + mean, and back.
  Tensor patched = latent.permute({0, 2, 1, 3}).reshape({B, T, C * F});
  Tensor y = ops::add(ops::mul(patched, stats_std_), stats_mean_);
  return y.view({B, T, C, F}).permute({0, 2, 1, 3}).contiguous();
}

Tensor AudioDecoder::upsample(const Level& level, const Tensor& x) const {
  Tensor y = level.upsample.forward(ops::upsample_nearest2d(x, 2));
  // Dropping the first sample of the causal axis undoes the encoder's padding (length 2n - 1).
  switch (config_.causality) {
    case CausalityAxis::Height: return y.slice(2, 1, y.size(2)).contiguous();
    case CausalityAxis::Width: return y.slice(3, 1, y.size(3)).contiguous();
    case CausalityAxis::None:
    case CausalityAxis::WidthCompatibility: return y;
  }
  return y;
}

Tensor AudioDecoder::forward(const Tensor& latent, const Probe& probe) const {
  const auto& c = config_;
  LTX2_CHECK(latent.dim() == 4 && latent.size(1) == c.z_channels,
             "audio VAE decoder: latent {} must be [B, {}, T, F]", latent.str(), c.z_channels);
  auto emit = [&](const char* name, const Tensor& t) {
    if (probe) probe(name, t);
  };
  const int64_t B = latent.size(0), T = latent.size(2), F = latent.size(3);
  const int64_t factor = AudioVaeDecoderConfig::kLatentDownsample;
  const int64_t target_t =
      c.causality == CausalityAxis::None ? T * factor : std::max<int64_t>(T * factor - (factor - 1), 1);
  const int64_t target_m = c.mel_bins > 0 ? c.mel_bins : F;

  Tensor h = un_normalize(latent.to(device_).to(dtype_));
  emit("latent_unnormalized", h);
  h = conv_in_.forward(h);
  emit("conv_in", h);
  for (const ResnetBlock& block : mid_) h = block.forward(h);
  emit("mid", h);
  for (int64_t l = static_cast<int64_t>(levels_.size()) - 1; l >= 0; --l) {
    for (const ResnetBlock& block : levels_[l].blocks) h = block.forward(h);
    if (l != 0) {
      h = upsample(levels_[l], h);
      emit(("up_" + std::to_string(l) + "_upsample").c_str(), h);
    }
  }
  emit("up_0_last_block", h);
  h = conv_out_.forward(norm_silu(h));
  emit("conv_out", h);

  // Crop, then zero-pad at the end, to exactly [B, out_ch, target_t, target_m].
  if (h.size(2) == target_t && h.size(3) == target_m) return h;
  Tensor out = Tensor::zeros({B, c.out_ch, target_t, target_m}, h.dtype(), h.device());
  const int64_t keep_t = std::min(h.size(2), target_t), keep_m = std::min(h.size(3), target_m);
  out.narrow(2, 0, keep_t).narrow(3, 0, keep_m).copy_(h.narrow(2, 0, keep_t).narrow(3, 0, keep_m));
  return out;
}

}  // namespace ltx2::audio_vae
