// The diffusion video decoder: loading, the deterministic stages and the sampling loop of an
// untiled decode.
#include "models/video_vae/diffusion_decoder.h"

#include <algorithm>

#include "core/error.h"
#include "io/layout.h"
#include "models/video_vae/patchify.h"
#include "models/video_vae/resnet.h"
#include "ops/edge_pad.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"

namespace ltx2::video_vae {

namespace {

constexpr int64_t kTimeSinusoidDim = 256;
constexpr int64_t kSharedAdaChunks = 7;
constexpr Dims3 kLatentToPixels = {8, 32, 32};

// resize_axis: pads by edge replication (repeat_last: after only; symmetric: half before, the rest
// after) or crops (repeat_last: from the end; symmetric: the same split).
Tensor resize_pixel_axis(const Tensor& x, int dim, int64_t size, bool symmetric) {
  const int64_t length = x.size(dim);
  if (length == size) return x;
  const int64_t need = std::abs(size - length), before = symmetric ? need / 2 : 0;
  if (length < size) return ops::edge_pad(x, dim, before, need - before, ops::PadMode::Replicate);
  return x.narrow(dim, before, size).contiguous();
}

// [B, C, F, H, W] <-> [B, F, H, W, C]
Tensor to_channels_last(const Tensor& x) {
  return x.permute({0, 2, 3, 4, 1}).contiguous();
}
Tensor to_channels_first(const Tensor& x) {
  return x.permute({0, 4, 1, 2, 3}).contiguous();
}

}  // namespace

struct DiffusionVideoDecoder::Geometry {
  Dims3 content;     // pixels of the latent as given
  Dims3 pad_before;  // latent cells added before / after by the size floor
  Dims3 pad_after;
  Dims3 work;    // the padded latent
  Dims3 full;    // its pixels
  Dims3 stage4;  // stage-4 input cells of the padded latent (no repeated frames)
  Dims3 stage5;  // pixels of the diffusion stage
  bool single_step_x0 = false;
};

DiffusionVideoDecoder::DiffusionVideoDecoder(const DiffusionVideoDecoderConfig& config,
                                             const WeightView& decoder, const WeightView& stats)
    : config_(config),
      dtype_(decoder.dtype()),
      device_(decoder.device()),
      stats_(stats.placed(decoder.dtype(), decoder.device()), config.in_channels) {
  const DiffusionVideoDecoderConfig& c = config_;
  const std::vector<int64_t>& ch = c.stage_channels;
  conv_in_w_ = decoder.load("conv_in.weight", {ch[0], c.in_channels});
  conv_in_b_ = decoder.load("conv_in.bias", {ch[0]});
  for (size_t s = 0; s + 1 < ch.size(); ++s) {
    std::vector<NaBlock> blocks;
    for (int64_t j = 0; j < c.stage_depths[s]; ++j)
      blocks.emplace_back(decoder.sub("det_stages." + std::to_string(s) + "." + std::to_string(j) + "."),
                          ch[s], c.head_dim, c.stage_kernels[s], c.rope_split);
    det_stages_.push_back(std::move(blocks));
    upsamples_.emplace_back(decoder.sub("upsamples." + std::to_string(s) + "."), ch[s], c.upsamples[s].stride,
                            c.upsamples[s].reduction);
  }
  const int64_t c5 = c.diffusion_channels(), noised = c.out_channels * c.patch_size * c.patch_size;
  const WeightView t = decoder.sub("t_embedder.mlp.");
  t_w1_ = t.load("0.weight", {c.t_emb_dim, kTimeSinusoidDim});
  t_b1_ = t.load("0.bias", {c.t_emb_dim});
  t_w2_ = t.load("2.weight", {c.t_emb_dim, c.t_emb_dim});
  t_b2_ = t.load("2.bias", {c.t_emb_dim});
  t_frequencies_ = sinusoid_frequencies(kTimeSinusoidDim / 2).to(device_);
  adaln_w_ = decoder.load("shared_adaln.proj.weight", {kSharedAdaChunks * c5, c.t_emb_dim});
  adaln_b_ = decoder.load("shared_adaln.proj.bias", {kSharedAdaChunks * c5});
  conv_in_x_t_w_ = decoder.load("conv_in_x_t.weight", {c5, noised});
  conv_in_x_t_b_ = decoder.load("conv_in_x_t.bias", {c5});
  for (int64_t i = 0; i < c.stage_depths.back(); ++i)
    diff_blocks_.emplace_back(decoder.sub("diff_blocks." + std::to_string(i) + "."), c5, c.context_channels(),
                              c.head_dim, c.stage5_kernel, c.rope_split);
  norm_out_ = decoder.load("norm_out.weight", {c5});
  conv_out_w_ = decoder.load("conv_out.weight", {noised, c5});
  conv_out_b_ = decoder.load("conv_out.bias", {noised});
}

DiffusionVideoDecoder DiffusionVideoDecoder::from_weights(const std::shared_ptr<const WeightSet>& set,
                                                          DType dtype, Device device) {
  return DiffusionVideoDecoder(
      DiffusionVideoDecoderConfig::from_metadata(set->config()),
      WeightView(set, component_prefixes(Component::VideoDecoder), "video VAE decoder").placed(dtype, device),
      WeightView(set, component_prefixes(Component::VideoStats), "video VAE statistics"));
}

std::vector<float> DiffusionVideoDecoder::timesteps() const {
  // torch.linspace(1.0, 1.0 / n, n) in float32: the first half from the start, the rest from the end.
  const int64_t n = config_.num_inference_steps;
  const float start = 1.f, end = static_cast<float>(1.0 / static_cast<double>(n));
  std::vector<float> ts(static_cast<size_t>(n), start);
  if (n == 1) return ts;
  const float step = (end - start) / static_cast<float>(n - 1);
  for (int64_t i = 0; i < n; ++i)
    ts[i] = i < n / 2 ? start + step * static_cast<float>(i) : end - step * static_cast<float>(n - 1 - i);
  return ts;
}

DiffusionVideoDecoder::Geometry DiffusionVideoDecoder::geometry(const Shape& latent) const {
  LTX2_CHECK(
      latent.size() == 5 && latent[0] == 1 && latent[1] == config_.in_channels,
      "diffusion video decoder: latent {} must be [1, {}, F, H, W] (batch 1, as the reference's chunked "
      "pathway)",
      shape_str(latent), config_.in_channels);
  Geometry g;
  const Dims3 mins = config_.min_latent_size();
  for (int a = 0; a < 3; ++a) {
    const int64_t n = latent[2 + a];
    LTX2_CHECK(n >= 1, "diffusion video decoder: latent {} has an empty axis", shape_str(latent));
    g.content[a] = a == 0 ? (n - 1) * kLatentToPixels[0] + 1 : n * kLatentToPixels[a];
    const int64_t need = std::max<int64_t>(0, mins[a] - n);
    g.pad_before[a] = a == 0 ? 0 : need / 2;  // frames repeat the last; H, W replicate both edges
    g.pad_after[a] = need - g.pad_before[a];
    g.work[a] = n + need;
    g.full[a] = a == 0 ? (g.work[a] - 1) * kLatentToPixels[0] + 1 : g.work[a] * kLatentToPixels[a];
  }
  g.stage4 = g.work;
  for (size_t s = 0; s < 3; ++s) {
    const Dims3& st = config_.upsamples[s].stride;
    for (int a = 0; a < 3; ++a) g.stage4[a] *= st[a];
    if (st[0] == 2) g.stage4[0] -= 1;
  }
  const Dims3& st = config_.upsamples[3].stride;
  g.stage5 = {st[0] == 2 ? g.stage4[0] * 2 - 1 : g.stage4[0] * st[0],
              g.stage4[1] * st[1] * config_.patch_size, g.stage4[2] * st[2] * config_.patch_size};
  g.stage5[0] = std::max(g.stage5[0], config_.stage5_kernel[0]);
  g.single_step_x0 =
      config_.num_inference_steps == 1 && config_.output == DiffusionVideoDecoderConfig::Output::X0;
  return g;
}

Shape DiffusionVideoDecoder::noise_shape(const Shape& latent_shape) const {
  const Geometry g = geometry(latent_shape);
  const Dims3& n = g.single_step_x0 ? g.stage5 : g.full;
  return {latent_shape[0], config_.out_channels, n[0], n[1], n[2]};
}

Tensor DiffusionVideoDecoder::model_step(const Tensor& x_t, const Tensor& context, float t, Tensor* t_emb_out,
                                         Tensor* modulation_out) const {
  // forward_diff_step_deferred
  const int64_t p = config_.patch_size;
  Tensor x = ops::linear(to_channels_last(patchify(x_t, p)), conv_in_x_t_w_, conv_in_x_t_b_);
  const Tensor scaled_t = ops::mul(Tensor::from_vector({t}, {1}).to(device_),
                                   static_cast<float>(config_.timestep_scale_multiplier));
  const Tensor sinusoid = sinusoidal_timestep_embedding(scaled_t, t_frequencies_).to(dtype_);
  const Tensor t_emb = ops::linear(ops::silu(ops::linear(sinusoid, t_w1_, t_b1_)), t_w2_, t_b2_);
  const int64_t c5 = config_.diffusion_channels();
  const Tensor modulation = ops::linear(ops::silu(t_emb), adaln_w_, adaln_b_).view({1, kSharedAdaChunks, c5});
  for (const DiffusionNaBlock& block : diff_blocks_) x = block.forward(x, context, modulation);
  x = ops::linear(ops::rms_norm(x, norm_out_, kNaNormEps), conv_out_w_, conv_out_b_);
  if (t_emb_out) *t_emb_out = t_emb;
  if (modulation_out) *modulation_out = modulation;
  return unpatchify(to_channels_first(x), p);
}

Tensor DiffusionVideoDecoder::decode(const Tensor& latent_in, const Tensor& noise, const Trace& trace) const {
  const Geometry g = geometry(latent_in.shape());
  const Shape want = noise_shape(latent_in.shape());
  LTX2_CHECK(noise.defined() && noise.shape() == want,
             "diffusion video decoder: noise {} must be {} for latent {}",
             noise.defined() ? noise.str() : std::string("(none)"), shape_str(want), latent_in.str());
  auto note = [&](const std::string& name, const Tensor& t) {
    if (trace) trace(name, t);
  };
  const DiffusionVideoDecoderConfig& c = config_;

  // Size floor, then the trailing frames repeated for NATTEN's last-frame border.
  Tensor latent = latent_in.to(device_).to(dtype_);
  for (int a = 0; a < 3; ++a)
    if (g.pad_before[a] + g.pad_after[a] > 0)
      latent = ops::edge_pad(latent, 2 + a, g.pad_before[a], g.pad_after[a], ops::PadMode::Replicate);
  const int64_t ghost = c.trailing_pad_latent_frames();
  if (ghost > 0) latent = ops::edge_pad(latent, 2, 0, ghost, ops::PadMode::Replicate);

  // Stages 1-3.
  Tensor x = ops::linear(to_channels_last(stats_.un_normalize(latent)), conv_in_w_, conv_in_b_);
  for (size_t s = 0; s < 3; ++s) {
    for (const NaBlock& b : det_stages_[s]) x = b.forward(x);
    x = upsamples_[s].forward(x, true);
  }
  note("stage4_input", x);

  // Stage 4 (deferred: its NA blocks only), the repeated frames cropped at stage-4 resolution.
  for (const NaBlock& b : det_stages_[3]) x = b.forward(x);
  if (ghost > 0) {
    const int64_t up_t = c.upsamples[3].stride[0];
    const int64_t frames = x.size(1), time_scale = kLatentToPixels[0] / up_t;
    const int64_t content_t = std::max<int64_t>(frames - ghost * time_scale, 1);
    const int64_t kernel_t = std::max<int64_t>(1, (c.stage5_kernel[0] + up_t - 1) / up_t);
    x = resize_pixel_axis(x, 1, std::min(frames, std::max(content_t, kernel_t)), false);
  }
  note("context", x);
  const Tensor context = upsamples_[3].forward(x, true);
  LTX2_CHECK(context.size(1) == g.stage5[0] && context.size(2) * c.patch_size == g.stage5[1] &&
                 context.size(3) * c.patch_size == g.stage5[2],
             "diffusion video decoder: context {} does not fit the diffusion stage's {} x {} x {} pixels",
             context.str(), g.stage5[0], g.stage5[1], g.stage5[2]);

  // The diffusion stage on the noise, brought to its shape as the reference's tile does.
  Tensor x_t = noise.to(device_).to(dtype_);
  x_t = resize_pixel_axis(x_t, 2, g.stage5[0], false);
  x_t = resize_pixel_axis(x_t, 3, g.stage5[1], true);
  x_t = resize_pixel_axis(x_t, 4, g.stage5[2], true);
  const std::vector<float> ts = timesteps();
  const bool x0 = c.output == DiffusionVideoDecoderConfig::Output::X0;
  auto step = [&](size_t i) {
    Tensor t_emb, modulation;
    Tensor out = model_step(x_t, context, ts[i], &t_emb, &modulation);
    const std::string name = "step" + std::to_string(i);
    note(name + ".t_emb", t_emb);
    note(name + ".modulation", modulation);
    note(name + ".model_out", out);
    return out.to(DType::F32);
  };
  // Euler: x_t - (t_now - t_next) * v, in float32, v = (x_t - x0) / t_now for x0 outputs.
  auto euler = [&](const Tensor& model_out, float t_now, float t_next) {
    const Tensor xf = x_t.to(DType::F32);
    const Tensor v = x0 ? ops::div(ops::sub(xf, model_out), t_now) : model_out;
    return ops::sub(xf, ops::mul(v, t_now - t_next)).to(dtype_);
  };
  for (size_t i = 0; i + 1 < ts.size(); ++i) x_t = euler(step(i), ts[i], ts[i + 1]);
  const Tensor last = step(ts.size() - 1);
  Tensor pixels = x0 ? last.to(dtype_) : euler(last, ts.back(), 0.f);

  // Crop to the padded latent's pixels, then to the content (the floor's pads removed).
  pixels = resize_pixel_axis(pixels, 2, g.full[0], false);
  pixels = resize_pixel_axis(pixels, 3, g.full[1], true);
  pixels = resize_pixel_axis(pixels, 4, g.full[2], true);
  pixels = pixels.narrow(2, 0, std::min(g.full[0], g.content[0]));
  pixels = pixels.narrow(3, g.pad_before[1] * kLatentToPixels[1], g.content[1]);
  pixels = pixels.narrow(4, g.pad_before[2] * kLatentToPixels[2], g.content[2]);
  return pixels.contiguous();
}

}  // namespace ltx2::video_vae
