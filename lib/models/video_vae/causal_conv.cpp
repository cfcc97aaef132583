// CausalConv3d forward: replicate-pad time, pad space by the configured mode, convolve.
#include "models/video_vae/causal_conv.h"

#include "ops/conv3d.h"
#include "ops/edge_pad.h"

namespace ltx2::video_vae {

namespace {
constexpr int64_t kKernel = 3;

ops::PadMode pad_mode(SpatialPadding p) {
  switch (p) {
    case SpatialPadding::Reflect: return ops::PadMode::Reflect;
    case SpatialPadding::Replicate: return ops::PadMode::Replicate;
    case SpatialPadding::Circular: return ops::PadMode::Circular;
    case SpatialPadding::Zeros: break;
  }
  return ops::PadMode::Zeros;
}
}  // namespace

CausalConv3d::CausalConv3d(const WeightView& w, const std::string& name, int64_t in_channels,
                           int64_t out_channels, SpatialPadding padding)
    : weight_(w.load(name + ".conv.weight", {out_channels, in_channels, kKernel, kKernel, kKernel})),
      bias_(w.load(name + ".conv.bias", {out_channels})),
      padding_(padding) {}

Tensor CausalConv3d::forward(const Tensor& x, bool causal) const {
  const int64_t half = kKernel / 2;
  Tensor padded = causal ? ops::edge_pad(x, 2, kKernel - 1, 0, ops::PadMode::Replicate)
                         : ops::edge_pad(x, 2, half, half, ops::PadMode::Replicate);
  ops::Conv3dParams params;
  if (padding_ == SpatialPadding::Zeros) {
    params.padding = {0, half, half};  // the convolution pads with zeros itself
  } else {
    padded = ops::edge_pad(padded, 3, half, half, pad_mode(padding_));
    padded = ops::edge_pad(padded, 4, half, half, pad_mode(padding_));
  }
  return ops::conv3d(padded, weight_, bias_, params);
}

}  // namespace ltx2::video_vae
