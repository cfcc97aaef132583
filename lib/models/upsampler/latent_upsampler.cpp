// LatentUpsampler: weight loading and forward (x2 and rational resampler).
#include "models/upsampler/latent_upsampler.h"

#include "core/error.h"
#include "io/layout.h"
#include "ops/channel_norm.h"
#include "ops/conv3d.h"
#include "ops/elementwise.h"
#include "ops/pixel_shuffle.h"

namespace ltx2::upsampler {

namespace {
constexpr int64_t kGroups = 32;
constexpr float kGroupNormEps = 1e-5f;
constexpr int64_t kBlurSize = 5;
}  // namespace

LatentUpsampler::Conv LatentUpsampler::load_conv3d(const WeightView& w, const std::string& name, int64_t out,
                                                   int64_t in) const {
  return {w.load(name + ".weight", {out, in, 3, 3, 3}), w.load(name + ".bias", {out})};
}

LatentUpsampler::Conv LatentUpsampler::load_conv2d(const WeightView& w, const std::string& name, int64_t out,
                                                   int64_t in) const {
  return {w.load(name + ".weight", {out, in, 3, 3}).view({out, in, 1, 3, 3}), w.load(name + ".bias", {out})};
}

LatentUpsampler::ResBlock LatentUpsampler::load_res_block(const WeightView& w) const {
  const int64_t m = config_.mid_channels;
  return {load_conv3d(w, "conv1", m, m), load_conv3d(w, "conv2", m, m), w.load("norm1.weight", {m}),
          w.load("norm1.bias", {m}),     w.load("norm2.weight", {m}),   w.load("norm2.bias", {m})};
}

LatentUpsampler::LatentUpsampler(const UpsamplerConfig& config, const WeightView& w)
    : config_(config), dtype_(w.dtype()), device_(w.device()) {
  const int64_t m = config.mid_channels, c = config.in_channels;
  initial_conv_ = load_conv3d(w, "initial_conv", m, c);
  initial_norm_w_ = w.load("initial_norm.weight", {m});
  initial_norm_b_ = w.load("initial_norm.bias", {m});
  for (int64_t i = 0; i < config.num_blocks_per_stage; ++i) {
    res_blocks_.push_back(load_res_block(w.sub("res_blocks." + std::to_string(i) + ".")));
    post_res_blocks_.push_back(load_res_block(w.sub("post_upsample_res_blocks." + std::to_string(i) + ".")));
  }
  const int64_t num = config.scale_num;
  if (config.rational_resampler) {
    upsampler_conv_ = load_conv2d(w, "upsampler.conv", num * num * m, m);
    if (config.scale_den > 1)
      blur_kernel_ = w.load("upsampler.blur_down.kernel", {1, 1, kBlurSize, kBlurSize})
                         .view({1, 1, 1, kBlurSize, kBlurSize});
  } else {
    upsampler_conv_ = load_conv2d(w, "upsampler.0", num * num * m, m);
  }
  final_conv_ = load_conv3d(w, "final_conv", c, m);
}

LatentUpsampler LatentUpsampler::from_weights(const std::shared_ptr<const WeightSet>& set, DType dtype,
                                              Device device) {
  return LatentUpsampler(UpsamplerConfig::from_metadata(set->config()),
                         WeightView(set, component_prefixes(Component::LatentUpsampler), "latent upsampler")
                             .placed(dtype, device));
}

Tensor LatentUpsampler::conv(const Conv& c, const Tensor& x) const {
  ops::Conv3dParams p;
  p.padding = {c.weight.size(2) / 2, 1, 1};
  return ops::conv3d(x, c.weight, c.bias, p);
}

Tensor LatentUpsampler::norm(const Tensor& x, const Tensor& w, const Tensor& b) const {
  return ops::group_norm(x, kGroups, w, b, kGroupNormEps);
}

Tensor LatentUpsampler::res_block(const ResBlock& r, const Tensor& x) const {
  Tensor h = ops::silu(norm(conv(r.conv1, x), r.norm1_w, r.norm1_b));
  h = norm(conv(r.conv2, h), r.norm2_w, r.norm2_b);
  return ops::silu(ops::add(h, x));
}

Tensor LatentUpsampler::upsample(const Tensor& x, const video_vae::Trace& trace) const {
  const int64_t num = config_.scale_num, den = config_.scale_den;
  Tensor y = conv(upsampler_conv_, x);
  if (config_.rational_resampler && trace) trace("upsampler_conv", y);
  y = ops::depth_to_space(y, {1, num, num});
  if (!blur_kernel_.defined()) return y;
  // Depthwise blur: every channel of every batch element is its own single-channel image.
  const Shape s = y.shape();
  ops::Conv3dParams p;
  p.stride = {1, den, den};
  p.padding = {0, kBlurSize / 2, kBlurSize / 2};
  Tensor blurred = ops::conv3d(y.view({s[0] * s[1], 1, s[2], s[3], s[4]}), blur_kernel_, Tensor(), p);
  return blurred.view({s[0], s[1], s[2], blurred.size(3), blurred.size(4)});
}

Tensor LatentUpsampler::forward(const Tensor& latent, const video_vae::Trace& trace) const {
  LTX2_CHECK(latent.dim() == 5 && latent.size(1) == config_.in_channels,
             "latent upsampler: latent {} must be [B, {}, F, H, W]", latent.str(), config_.in_channels);
  auto note = [&](const std::string& name, const Tensor& t) {
    if (trace) trace(name, t);
  };
  Tensor x =
      ops::silu(norm(conv(initial_conv_, latent.to(device_).to(dtype_)), initial_norm_w_, initial_norm_b_));
  note("initial_block", x);
  for (const auto& r : res_blocks_) x = res_block(r, x);
  note("pre_res_blocks", x);
  x = upsample(x, trace);
  note("upsampler", x);
  for (const auto& r : post_res_blocks_) x = res_block(r, x);
  note("post_res_blocks", x);
  x = conv(final_conv_, x);
  note("final_conv", x);
  return x;
}

Tensor upsample_video(const LatentUpsampler& upsampler, const Tensor& latent,
                      const video_vae::LatentStatistics& stats) {
  return stats.normalize(
      upsampler.forward(stats.un_normalize(latent.to(upsampler.device()).to(upsampler.dtype()))));
}

}  // namespace ltx2::upsampler
