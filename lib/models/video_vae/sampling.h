// The video VAE's resampling blocks.
// DepthToSpaceUpsample (decoder compress_time / compress_space / compress_all): a CausalConv3d to
// P*C/m channels, depth-to-space by the stride (P = its volume), the first frame dropped when time
// doubles, plus (residual) the input itself depth-to-spaced and tiled P/m times over channels.
// SpaceToDepthDownsample (encoder *_res): frame 0 prepended when time halves, then a conv path
// (CausalConv3d to C*m/P, space-to-depth) plus a skip path (space-to-depth, mean over each run of
// P/m channels); output C*m channels.
#pragma once

#include <array>

#include "core/tensor.h"
#include "models/video_vae/causal_conv.h"

namespace ltx2::video_vae {

class DepthToSpaceUpsample {
 public:
  DepthToSpaceUpsample(const WeightView& w, int64_t in_channels, const VideoVaeBlock& block,
                       SpatialPadding padding);
  Tensor forward(const Tensor& x, bool causal) const;
  int64_t out_channels() const { return in_channels_ / multiplier_; }

 private:
  CausalConv3d conv_;
  std::array<int64_t, 3> stride_;
  int64_t in_channels_, multiplier_;
  bool residual_;
};

class SpaceToDepthDownsample {
 public:
  SpaceToDepthDownsample(const WeightView& w, int64_t in_channels, const VideoVaeBlock& block,
                         SpatialPadding padding);
  Tensor forward(const Tensor& x, bool causal) const;
  int64_t out_channels() const { return in_channels_ * multiplier_; }

 private:
  CausalConv3d conv_;
  std::array<int64_t, 3> stride_;
  int64_t in_channels_, multiplier_;
};

}  // namespace ltx2::video_vae
