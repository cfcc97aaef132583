// CausalConv3d of the video VAE: a 3x3x3 convolution (keys <name>.conv.weight [Cout, Cin, 3, 3, 3]
// and <name>.conv.bias) whose temporal padding replicates frames (causal: two copies of frame 0
// in front; non-causal: one copy of the first frame in front and of the last behind) and whose
// spatial padding (1 on each side of H and W) uses the configured mode. Frame count is preserved.
#pragma once

#include <string>

#include "core/tensor.h"
#include "io/configs/video_vae_config.h"
#include "io/weights.h"

namespace ltx2::video_vae {

class CausalConv3d {
 public:
  CausalConv3d() = default;
  CausalConv3d(const WeightView& w, const std::string& name, int64_t in_channels, int64_t out_channels,
               SpatialPadding padding);

  Tensor forward(const Tensor& x, bool causal) const;
  int64_t out_channels() const { return weight_.size(0); }

 private:
  Tensor weight_, bias_;
  SpatialPadding padding_ = SpatialPadding::Zeros;
};

}  // namespace ltx2::video_vae
