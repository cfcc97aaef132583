// Depth-to-space upsampler and space-to-depth downsampler blocks of the video VAE.
#include "models/video_vae/sampling.h"

#include <vector>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/pixel_shuffle.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace ltx2::video_vae {

namespace {
int64_t volume(const std::array<int64_t, 3>& s) {
  return s[0] * s[1] * s[2];
}
Tensor drop_first_frame(const Tensor& x) {
  return x.slice(2, 1, x.size(2));
}
}  // namespace

DepthToSpaceUpsample::DepthToSpaceUpsample(const WeightView& w, int64_t in_channels,
                                           const VideoVaeBlock& block, SpatialPadding padding)
    : stride_(block.stride()),
      in_channels_(in_channels),
      multiplier_(block.multiplier),
      residual_(block.residual) {
  const int64_t P = volume(stride_);
  LTX2_CHECK(in_channels % multiplier_ == 0 && (!residual_ || in_channels % P == 0),
             "{}: upsampler of {} channels with multiplier {} and stride volume {}", w.component(),
             in_channels, multiplier_, P);
  conv_ = CausalConv3d(w, "conv", in_channels, P * in_channels / multiplier_, padding);
}

Tensor DepthToSpaceUpsample::forward(const Tensor& x, bool causal) const {
  Tensor y = ops::depth_to_space(conv_.forward(x, causal), stride_);
  if (stride_[0] == 2) y = drop_first_frame(y);
  if (!residual_) return y;
  Tensor skip = ops::depth_to_space(x, stride_);
  const int64_t copies = volume(stride_) / multiplier_;
  skip = ops::cat(std::vector<Tensor>(static_cast<size_t>(copies), skip), 1);
  if (stride_[0] == 2) skip = drop_first_frame(skip);
  return ops::add(y, skip);
}

SpaceToDepthDownsample::SpaceToDepthDownsample(const WeightView& w, int64_t in_channels,
                                               const VideoVaeBlock& block, SpatialPadding padding)
    : stride_(block.stride()), in_channels_(in_channels), multiplier_(block.multiplier) {
  const int64_t P = volume(stride_);
  LTX2_CHECK(P % multiplier_ == 0, "{}: downsampler multiplier {} does not divide stride volume {}",
             w.component(), multiplier_, P);
  conv_ = CausalConv3d(w, "conv", in_channels, in_channels * multiplier_ / P, padding);
}

Tensor SpaceToDepthDownsample::forward(const Tensor& x, bool causal) const {
  Tensor in = x;
  if (stride_[0] == 2) in = ops::cat({x.slice(2, 0, 1), x}, 2);
  const int64_t group = volume(stride_) / multiplier_;
  Tensor skip = ops::space_to_depth(in, stride_);
  const Shape& s = skip.shape();
  skip = ops::mean(skip.view({s[0], s[1] / group, group, s[2], s[3], s[4]}), 2);
  Tensor y = ops::space_to_depth(conv_.forward(in, causal), stride_);
  return ops::add(y, skip);
}

}  // namespace ltx2::video_vae
