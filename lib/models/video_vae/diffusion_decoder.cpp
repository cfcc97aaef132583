// The diffusion video decoder: loading, the deterministic stages, and the sampling loop of a tile.
#include "models/video_vae/diffusion_decoder.h"

#include <algorithm>

#include "core/error.h"
#include "io/layout.h"
#include "models/video_vae/diffusion_tiling.h"
#include "models/video_vae/patchify.h"
#include "models/video_vae/resnet.h"
#include "ops/edge_pad.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/shape.h"
#include "tiling/tile_blender.h"

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

// A tile's diffusion-stage pixels (stage5_pixel_shape_from_stage4): its stage-4 cells through the
// last upsample and the patch, the first tile one frame short where time doubles, a tile reaching
// the end at least stage5_kernel's frames.
Dims3 stage5_pixels(const DiffusionVideoDecoderConfig& c, const tiling::Tile& tile, int64_t stage4_frames) {
  const Dims3& st = c.upsamples[3].stride;
  const bool origin = tile.in[0].start == 0, trailing = tile.in[0].stop == stage4_frames;
  Dims3 out = {tile.in[0].length() * st[0] - (origin && st[0] == 2 ? 1 : 0),
               tile.in[1].length() * st[1] * c.patch_size, tile.in[2].length() * st[2] * c.patch_size};
  if (trailing) out[0] = std::max(out[0], c.stage5_kernel[0]);
  return out;
}

}  // namespace

struct DiffusionVideoDecoder::Geometry {
  Dims3 content;     // pixels of the latent as given
  Dims3 pad_before;  // latent cells added before / after by the size floor
  Dims3 pad_after;
  Dims3 work;    // the padded latent
  Dims3 full;    // its pixels
  Dims3 stage4;  // stage-4 input cells of the padded latent (no repeated frames)
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
  g.stage4 = config_.stage4_cells(g.work);
  return g;
}

tiling::TilePlan DiffusionVideoDecoder::tile_plan(const Shape& latent_shape,
                                                  const TileSizeConfig& tiles) const {
  const Geometry g = geometry(latent_shape);
  return plan_diffusion_tiles(config_, g.stage4, g.full, tiles);
}

std::array<tiling::Range, 3> DiffusionVideoDecoder::content_box(const Shape& latent_shape) const {
  const Geometry g = geometry(latent_shape);
  std::array<tiling::Range, 3> box;
  for (int a = 0; a < 3; ++a) {
    const int64_t start = g.pad_before[a] * kLatentToPixels[a];
    box[a] = {start, start + std::min(g.content[a], g.full[a] - start)};
  }
  return box;
}

std::vector<Shape> DiffusionVideoDecoder::noise_shapes(const Shape& latent_shape,
                                                       const tiling::TilePlan& plan) const {
  const Geometry g = geometry(latent_shape);
  LTX2_CHECK(plan.out_extent == g.full, "diffusion video decoder: the tile plan is not for latent {}",
             shape_str(latent_shape));
  if (!single_step_x0()) return {{1, config_.out_channels, g.full[0], g.full[1], g.full[2]}};
  std::vector<Shape> out;
  for (const tiling::Tile& t : plan.tiles) {
    const Dims3 p = stage5_pixels(config_, t, g.stage4[0]);
    out.push_back({1, config_.out_channels, p[0], p[1], p[2]});
  }
  return out;
}

Shape DiffusionVideoDecoder::noise_shape(const Shape& latent_shape) const {
  return noise_shapes(latent_shape, tile_plan(latent_shape)).at(0);
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

Tensor DiffusionVideoDecoder::stage4_input(const Tensor& latent_in) const {
  const Geometry g = geometry(latent_in.shape());
  // Size floor, then the trailing frames repeated for NATTEN's last-frame border.
  Tensor latent = latent_in.to(device_).to(dtype_);
  for (int a = 0; a < 3; ++a)
    if (g.pad_before[a] + g.pad_after[a] > 0)
      latent = ops::edge_pad(latent, 2 + a, g.pad_before[a], g.pad_after[a], ops::PadMode::Replicate);
  const int64_t ghost = config_.trailing_pad_latent_frames();
  if (ghost > 0) latent = ops::edge_pad(latent, 2, 0, ghost, ops::PadMode::Replicate);
  Tensor x = ops::linear(to_channels_last(stats_.un_normalize(latent)), conv_in_w_, conv_in_b_);
  for (size_t s = 0; s < 3; ++s) {
    for (const NaBlock& b : det_stages_[s]) x = b.forward(x);
    x = upsamples_[s].forward(x, true);
  }
  return x;
}

Tensor DiffusionVideoDecoder::decode_tile(const Tensor& stage4_input, const tiling::TilePlan& plan,
                                          size_t index, const std::vector<Tensor>& noise,
                                          const Trace& trace) const {
  auto note = [&](const std::string& name, const Tensor& t) {
    if (trace) trace(name, t);
  };
  const DiffusionVideoDecoderConfig& c = config_;
  const tiling::Tile& tile = plan.tiles.at(index);
  const int64_t stage4_frames = plan.in_extent[0];
  const bool origin = tile.in[0].start == 0, trailing = tile.in[0].stop == stage4_frames;
  const int64_t ghost = c.trailing_pad_latent_frames();

  // Stage 4 (deferred: its NA blocks only) on the tile's cells, a trailing tile with the repeated
  // frames, which are cropped again at stage-4 resolution.
  Tensor x = stage4_input.narrow(1, tile.in[0].start,
                                 (trailing ? stage4_input.size(1) : tile.in[0].stop) - tile.in[0].start);
  x = x.narrow(2, tile.in[1].start, tile.in[1].length()).narrow(3, tile.in[2].start, tile.in[2].length());
  x = x.contiguous();
  for (const NaBlock& b : det_stages_[3]) x = b.forward(x);
  if (trailing && ghost > 0) {
    const int64_t up_t = c.upsamples[3].stride[0];
    const int64_t frames = x.size(1), time_scale = kLatentToPixels[0] / up_t;
    const int64_t content_t = std::max<int64_t>(frames - ghost * time_scale, 1);
    const int64_t kernel_t = std::max<int64_t>(1, (c.stage5_kernel[0] + up_t - 1) / up_t);
    x = resize_pixel_axis(x, 1, std::min(frames, std::max(content_t, kernel_t)), false);
  }
  note("context", x);
  const Tensor context = upsamples_[3].forward(x, origin);
  const Dims3 stage5 = stage5_pixels(c, tile, stage4_frames);
  LTX2_CHECK(context.size(1) == stage5[0] && context.size(2) * c.patch_size == stage5[1] &&
                 context.size(3) * c.patch_size == stage5[2],
             "diffusion video decoder: context {} does not fit the diffusion stage's {} x {} x {} pixels",
             context.str(), stage5[0], stage5[1], stage5[2]);

  // The diffusion stage from the tile's noise: its own draw (a single x0 step), else its box of the
  // one full draw brought to the stage's shape.
  Tensor x_t;
  if (single_step_x0()) {
    x_t = noise.at(index);
  } else {
    x_t = noise.at(0);
    for (int a = 0; a < 3; ++a) x_t = x_t.narrow(2 + a, tile.out[a].start, tile.out[a].length());
  }
  LTX2_CHECK(x_t.dim() == 5 && x_t.size(0) == 1 && x_t.size(1) == c.out_channels,
             "diffusion video decoder: tile {} noise {} is not [1, {}, F, H, W]", index, x_t.str(),
             c.out_channels);
  x_t = x_t.to(device_).to(dtype_);
  x_t = resize_pixel_axis(x_t, 2, stage5[0], false);
  x_t = resize_pixel_axis(x_t, 3, stage5[1], true);
  x_t = resize_pixel_axis(x_t, 4, stage5[2], true);
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

  // Cropped to the tile's box (crop_pixels_to_content: frames from the end, H and W symmetric).
  pixels = resize_pixel_axis(pixels, 2, tile.out[0].length(), false);
  pixels = resize_pixel_axis(pixels, 3, tile.out[1].length(), true);
  return resize_pixel_axis(pixels, 4, tile.out[2].length(), true);
}

void DiffusionVideoDecoder::decode(const Tensor& latent, const std::vector<Tensor>& noise,
                                   const tiling::TilePlan& plan,
                                   const std::function<void(const Tensor& frames)>& on_chunk) const {
  const std::vector<Shape> want = noise_shapes(latent.shape(), plan);
  LTX2_CHECK(noise.size() == want.size(),
             "diffusion video decoder: {} noise draws given, the decode takes {}", noise.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    LTX2_CHECK(noise[i].shape() == want[i],
               "diffusion video decoder: noise draw {} is {}, the decode takes {}", i, noise[i].str(),
               shape_str(want[i]));
  const std::array<tiling::Range, 3> box = content_box(latent.shape());
  const Tensor features = stage4_input(latent);
  tiling::TileBlender blender(plan, 1, config_.out_channels, device_);
  int64_t next_frame = 0;  // of the blend's frames
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    std::vector<Tensor> run;
    for (const Tensor& f : blender.add(i, decode_tile(features, plan, i, noise))) {
      if (next_frame >= box[0].start && next_frame < box[0].stop)
        run.push_back(f.narrow(3, box[1].start, box[1].length()).narrow(4, box[2].start, box[2].length()));
      ++next_frame;
    }
    if (!run.empty()) on_chunk(ops::cat(run, 2));
  }
  LTX2_CHECK(blender.done(), "diffusion video decoder: the tile plan left frames unblended");
}

Tensor DiffusionVideoDecoder::decode(const Tensor& latent, const Tensor& noise, const Trace& trace) const {
  const tiling::TilePlan plan = tile_plan(latent.shape());
  const Shape want = noise_shapes(latent.shape(), plan).at(0);
  LTX2_CHECK(noise.defined() && noise.shape() == want,
             "diffusion video decoder: noise {} must be {} for latent {}",
             noise.defined() ? noise.str() : std::string("(none)"), shape_str(want), latent.str());
  const Tensor features = stage4_input(latent);
  if (trace) trace("stage4_input", features);
  Tensor pixels = decode_tile(features, plan, 0, {noise}, trace);
  const std::array<tiling::Range, 3> box = content_box(latent.shape());
  for (int a = 0; a < 3; ++a) pixels = pixels.narrow(2 + a, box[a].start, box[a].length());
  return pixels.contiguous();
}

}  // namespace ltx2::video_vae
