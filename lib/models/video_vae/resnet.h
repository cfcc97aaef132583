// Residual blocks of the video VAE: ResnetBlock3D (PixelNorm, SiLU, CausalConv3d twice, identity
// shortcut) and the "res_x" mid block that chains them. With timestep conditioning the mid block
// owns a time embedder (256-d sinusoid -> linear -> SiLU -> linear, width 4C) and each res block a
// scale_shift_table [4, C] whose rows, plus the embedding, are (shift1, scale1, shift2, scale2).
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/video_vae/causal_conv.h"

namespace ltx2::video_vae {

// The epsilon of every PixelNorm of the video VAE: the res blocks' and the encoder's and decoder's
// output norms.
inline constexpr float kPixelNormEps = 1e-8f;

// PixArt-style timestep embedding: <name>.timestep_embedder.linear_{1,2}.{weight,bias}, placed as
// the view is; the sinusoid is formed in float32 and cast to the weights' dtype, as the reference does.
class TimestepEmbedder {
 public:
  TimestepEmbedder() = default;
  TimestepEmbedder(const WeightView& w, const std::string& name, int64_t width);
  // t [B] float32 on the weights' device (already multiplied by the timestep scale) -> [B, width].
  Tensor forward(const Tensor& t) const;

 private:
  Tensor w1_, b1_, w2_, b2_;
  Tensor frequencies_;  // [1, 128] float32 on the weights' device
};

// f_i = 10000^(-i/half) for i < half, float32 as torch computes them: [1, half] on the CPU.
Tensor sinusoid_frequencies(int64_t half);
// The sinusoidal embedding with cosines first: t [B] f32, frequencies [1, half] (same device) ->
// [B, 2 half] = [cos(t f_i), sin(t f_i)] in float32.
Tensor sinusoidal_timestep_embedding(const Tensor& t, const Tensor& frequencies);

// x * (1 + scale) + shift with shift, scale [B, C] broadcast over [B, C, F, H, W].
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);

class ResnetBlock3D {
 public:
  ResnetBlock3D(const WeightView& w, int64_t channels, SpatialPadding padding, bool conditioned);
  // `embedding`: the mid block's time embedding [B, 4C] when conditioned, else undefined.
  Tensor forward(const Tensor& x, bool causal, const Tensor& embedding) const;

 private:
  CausalConv3d conv1_, conv2_;
  Tensor scale_shift_table_;  // [4, C] when conditioned
  int64_t channels_;
};

class MidBlock3D {
 public:
  MidBlock3D(const WeightView& w, int64_t channels, int64_t num_layers, SpatialPadding padding,
             bool conditioned);
  // scaled_timestep [B] when conditioned, else undefined. `time_embedding_out`, when given,
  // receives the block's time embedding [B, 4C] (for debugging against fixtures).
  Tensor forward(const Tensor& x, bool causal, const Tensor& scaled_timestep,
                 Tensor* time_embedding_out = nullptr) const;

 private:
  std::vector<ResnetBlock3D> blocks_;
  TimestepEmbedder time_embedder_;
  bool conditioned_;
  int64_t channels_;
};

}  // namespace ltx2::video_vae
