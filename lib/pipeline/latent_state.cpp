// Latent state construction, conditioning items and the noiser (see latent_state.h).
#include "pipeline/latent_state.h"

#include <algorithm>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/shape.h"
#include "pipeline/latent_tools.h"
#include "pipeline/noise.h"

namespace ltx2::pipeline {

namespace {

LatentState make_state(const Tensor& tokens, const Tensor& positions) {
  LatentState s;
  s.latent = tokens;
  s.clean_latent = tokens.clone();
  s.denoise_mask = Tensor::full({tokens.size(0), tokens.size(1), 1}, 1.0f);
  s.positions = positions;
  s.target_tokens = tokens.size(1);
  return s;
}

Tensor initial_or_zeros(const Shape& shape, const Tensor& initial) {
  if (!initial.defined()) return Tensor::zeros(shape);
  LTX2_CHECK(initial.shape() == shape, "initial latent {} does not match the state shape {}",
             shape_str(initial.shape()), shape_str(shape));
  return initial.to(DType::F32).contiguous();
}

// Positions of a keyframe grid placed at pixel frame frame_idx: time bounds in pixel frames (the
// causal fix only at frame 0), shifted by frame_idx; a keyframe of one pixel frame spans
// [start, start + 1); then seconds.
Tensor keyframe_positions(int64_t batch, const std::array<int64_t, 3>& grid, int64_t frame_idx,
                          int64_t num_pixel_frames, double fps) {
  Tensor pos = video_positions(batch, grid, fps).clone();
  float* p = pos.data<float>();
  const int64_t T = pos.size(2), hw = grid[1] * grid[2], scale = kVideoScaleFactors[0];
  const float fps32 = static_cast<float>(fps);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t f = t / hw;
      int64_t start = f * scale, end = (f + 1) * scale;
      if (frame_idx == 0) {
        start = std::max<int64_t>(start + 1 - scale, 0);
        end = std::max<int64_t>(end + 1 - scale, 0);
      }
      start += frame_idx;
      end = num_pixel_frames == 1 ? start + 1 : end + frame_idx;
      float* se = p + (b * 3 * T + t) * 2;
      se[0] = static_cast<float>(start) / fps32;
      se[1] = static_cast<float>(end) / fps32;
    }
  return pos;
}

void apply_latent_index(LatentState& s, const VideoConditionByLatentIndex& c,
                        const std::array<int64_t, 3>& grid) {
  const Tensor tokens = patchify_video(c.latent.to(DType::F32));
  const int64_t hw = grid[1] * grid[2];
  LTX2_CHECK(c.latent.dim() == 5 && c.latent.size(3) == grid[1] && c.latent.size(4) == grid[2],
             "image conditioning latent {} does not match the latent grid {}x{}", shape_str(c.latent.shape()),
             grid[1], grid[2]);
  const int64_t start = c.latent_idx * hw, n = tokens.size(1);
  LTX2_CHECK(c.latent_idx >= 0 && start + n <= s.target_tokens,
             "conditioning latent index {} is outside the {} latent frames", c.latent_idx, grid[0]);
  s.clean_latent.narrow(1, start, n).copy_(tokens);
  s.denoise_mask.narrow(1, start, n).fill_(1.0f - c.strength);
}

void apply_keyframe(LatentState& s, const VideoConditionByKeyframeIndex& c, double fps) {
  LTX2_CHECK(c.keyframes.dim() == 5, "keyframe latent must be [B, C, F, H, W], got {}",
             shape_str(c.keyframes.shape()));
  const Tensor tokens = patchify_video(c.keyframes.to(DType::F32));
  const std::array<int64_t, 3> grid = {c.keyframes.size(2), c.keyframes.size(3), c.keyframes.size(4)};
  const int64_t B = tokens.size(0), n = tokens.size(1);
  s.latent = ops::cat({s.latent, Tensor::zeros(tokens.shape())}, 1);
  s.clean_latent = ops::cat({s.clean_latent, tokens}, 1);
  s.denoise_mask = ops::cat({s.denoise_mask, Tensor::full({B, n, 1}, 1.0f - c.strength)}, 1);
  s.positions = ops::cat({s.positions, keyframe_positions(B, grid, c.frame_idx, c.num_pixel_frames, fps)}, 2);
  if (s.keyframes_mask.defined())
    s.keyframes_mask = ops::cat({s.keyframes_mask, Tensor::zeros({B, n, 1})}, 1);
}

}  // namespace

LatentState create_video_state(const Shape& latent_shape, double fps, const Tensor& initial) {
  LTX2_CHECK(latent_shape.size() == 5, "video latent shape must be [B, C, F, H, W], got {}",
             shape_str(latent_shape));
  const std::array<int64_t, 3> grid = {latent_shape[2], latent_shape[3], latent_shape[4]};
  LatentState s = make_state(patchify_video(initial_or_zeros(latent_shape, initial)),
                             video_positions(latent_shape[0], grid, fps));
  s.keyframes_mask = video_keyframes_mask(latent_shape[0], grid);
  return s;
}

LatentState create_audio_state(const Shape& latent_shape, const Tensor& initial) {
  LTX2_CHECK(latent_shape.size() == 4, "audio latent shape must be [B, C, T, M], got {}",
             shape_str(latent_shape));
  return make_state(patchify_audio(initial_or_zeros(latent_shape, initial)),
                    audio_positions(latent_shape[0], latent_shape[2]));
}

void apply_conditioning(LatentState& state, const VideoConditioning& item,
                        const std::array<int64_t, 3>& grid_fhw, double fps) {
  if (const auto* li = std::get_if<VideoConditionByLatentIndex>(&item))
    apply_latent_index(state, *li, grid_fhw);
  else
    apply_keyframe(state, std::get<VideoConditionByKeyframeIndex>(item), fps);
}

void apply_noise(LatentState& state, const Tensor& noise, float noise_scale) {
  state.latent = noise_latent(state.latent, state.clean_latent, state.denoise_mask, noise, noise_scale);
}

Tensor state_timesteps(const LatentState& state, float sigma) {
  return ops::mul(state.denoise_mask, sigma);
}

void clear_conditioning(LatentState& state) {
  const int64_t n = state.target_tokens;
  auto cut = [n](Tensor& t, int dim) {
    if (t.defined() && t.size(dim) > n) t = t.narrow(dim, 0, n).contiguous();
  };
  cut(state.latent, 1);
  cut(state.clean_latent, 1);
  cut(state.denoise_mask, 1);
  cut(state.keyframes_mask, 1);
  cut(state.positions, 2);
}

}  // namespace ltx2::pipeline
