// Latent tools: token layouts and positions of the transformer's two streams.
//
// Video latent [B, C, F, H, W] <-> tokens [B, (F/p1)(H/p2)(W/p3), C*p1*p2*p3], tokens in (f, h, w)
// row-major order, features (c, p1, p2, p3) row-major. Audio latent [B, C, T, M] <-> tokens
// [B, T, C*M], features channel-major (c*M + m).
// Positions are [start, end) intervals per token: video [B, 3, T, 2] = (time in seconds, y in
// pixels, x in pixels) with the causal first-frame fix on time; audio [B, 1, T, 2] in seconds.
#pragma once

#include <array>
#include <cstdint>

#include "core/tensor.h"

namespace ltx2::pipeline {

// Pixel frames / pixels per latent step along (time, height, width).
inline constexpr std::array<int64_t, 3> kVideoScaleFactors = {8, 32, 32};

// Latent extent (frames, height, width) of a video of `pixel_frames` x `height` x `width`.
std::array<int64_t, 3> video_latent_grid(int64_t pixel_frames, int64_t height, int64_t width);
// Audio latent frames for a clip of pixel_frames at fps: round(frames / fps * 25).
int64_t audio_latent_frames(int64_t pixel_frames, double fps);

// patch = (p1, p2, p3) over (frames, height, width).
Tensor patchify_video(const Tensor& latent, const std::array<int64_t, 3>& patch = {1, 1, 1});
// tokens [B, T, C*p1*p2*p3] back to [B, C, F, H, W]; grid_fhw is the latent (F, H, W).
Tensor unpatchify_video(const Tensor& tokens, const std::array<int64_t, 3>& grid_fhw,
                        const std::array<int64_t, 3>& patch = {1, 1, 1});
Tensor patchify_audio(const Tensor& latent);
// tokens [B, T, C*M] back to [B, C, T, M].
Tensor unpatchify_audio(const Tensor& tokens, int64_t channels, int64_t mel_bins);

// Video token positions [B, 3, T, 2] for a latent grid (F, H, W) with patch size `patch`.
Tensor video_positions(int64_t batch, const std::array<int64_t, 3>& grid_fhw, double fps,
                       const std::array<int64_t, 3>& patch = {1, 1, 1});
// [B, T, 1]: 1 on the tokens of the first latent frame, 0 elsewhere.
Tensor video_keyframes_mask(int64_t batch, const std::array<int64_t, 3>& grid_fhw,
                            const std::array<int64_t, 3>& patch = {1, 1, 1});
// Audio token positions [B, 1, T, 2] for T latent frames.
Tensor audio_positions(int64_t batch, int64_t tokens);

}  // namespace ltx2::pipeline
