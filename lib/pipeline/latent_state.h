// The latent state one diffusion stage denoises, per stream (the reference's LatentState with
// create_initial_state, the conditioning items and the GaussianNoiser).
//
// Token layout (patchified, see latent_tools.h): latent / clean_latent [B, T, C], denoise_mask
// [B, T, 1] (1 = generate, 0 = keep the clean value), positions [B, n_axes, T, 2], keyframes_mask
// [B, T, 1] (video only). Conditionings may append tokens after the target grid's T0 tokens;
// clear_conditioning() drops them again after the loop.
#pragma once

#include <array>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace ltx2::pipeline {

struct LatentState {
  Tensor latent, clean_latent, denoise_mask, positions;
  Tensor keyframes_mask;      // video only
  int64_t target_tokens = 0;  // tokens of the target grid (before appended keyframes)
};

// Video latent shape [B, C, F, H, W]: latent = zeros or `initial` (same shape), clean = latent,
// mask 1, positions with the causal time fix at `fps`, keyframes mask on latent frame 0.
LatentState create_video_state(const Shape& latent_shape, double fps, const Tensor& initial = {});
// Audio latent shape [B, C, T, M].
LatentState create_audio_state(const Shape& latent_shape, const Tensor& initial = {});

// Replaces the tokens of latent frame `latent_idx` by the image latent [B, C, 1, H, W] as the
// clean value, with denoise mask 1 - strength.
struct VideoConditionByLatentIndex {
  Tensor latent;
  float strength = 1;
  int64_t latent_idx = 0;
};

// Appends the keyframe latent's [B, C, f, H, W] tokens (noisy latent zeros, clean latent the
// tokens, mask 1 - strength, keyframes mask 0) at pixel frame `frame_idx`: their positions are
// their own grid's (causal time fix only at frame 0) shifted by frame_idx frames; a keyframe that
// encodes one pixel frame gets the time interval [start, start + 1).
struct VideoConditionByKeyframeIndex {
  Tensor keyframes;
  int64_t frame_idx = 0;
  float strength = 1;
  int64_t num_pixel_frames = 1;
};

using VideoConditioning = std::variant<VideoConditionByLatentIndex, VideoConditionByKeyframeIndex>;

// `grid_fhw` is the state's target latent grid; `fps` the video's frame rate.
void apply_conditioning(LatentState& state, const VideoConditioning& item,
                        const std::array<int64_t, 3>& grid_fhw, double fps);

// GaussianNoiser: latent = lerp(clean, lerp(latent, noise, noise_scale), denoise_mask).
void apply_noise(LatentState& state, const Tensor& noise, float noise_scale);

// Per-token timesteps the DiT sees at `sigma`: denoise_mask * sigma, [B, T, 1].
Tensor state_timesteps(const LatentState& state, float sigma);

// Drops appended conditioning tokens (keeps the first target_tokens).
void clear_conditioning(LatentState& state);

}  // namespace ltx2::pipeline
