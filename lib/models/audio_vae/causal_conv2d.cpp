#include "models/audio_vae/causal_conv2d.h"

#include "ops/conv2d.h"

namespace ltx2::audio_vae {

CausalConv2d::CausalConv2d(const WeightView& weights, const std::string& name, int64_t in_channels,
                           int64_t out_channels, int64_t kernel, CausalityAxis axis)
    : weight_(weights.load(name + ".conv.weight", {out_channels, in_channels, kernel, kernel})),
      bias_(weights.load(name + ".conv.bias", {out_channels})),
      axis_(axis) {}

Tensor CausalConv2d::forward(const Tensor& x) const {
  const int64_t pad_t = weight_.size(2) - 1, pad_m = weight_.size(3) - 1;
  ops::Conv2dPadding pad;
  // Symmetric splits put the odd sample after, as the reference's F.pad tuples do.
  const bool time_causal = axis_ == CausalityAxis::Height;
  const bool mel_causal = axis_ == CausalityAxis::Width || axis_ == CausalityAxis::WidthCompatibility;
  pad.top = time_causal ? pad_t : pad_t / 2;
  pad.bottom = pad_t - pad.top;
  pad.left = mel_causal ? pad_m : pad_m / 2;
  pad.right = pad_m - pad.left;
  return ops::conv2d(x, weight_, bias_, pad);
}

}  // namespace ltx2::audio_vae
