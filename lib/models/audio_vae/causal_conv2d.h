// The audio VAE's CausalConv2d: explicit zero padding that is one-sided along the causal axis,
// then a stride-1 Conv2d (keys <name>.conv.weight [C_out, C_in, k, k] and <name>.conv.bias).
#pragma once

#include <string>

#include "core/tensor.h"
#include "io/configs/audio_vae_config.h"
#include "io/weights.h"

namespace ltx2::audio_vae {

class CausalConv2d {
 public:
  CausalConv2d() = default;
  // Loads <name>.conv.{weight,bias} from `weights`, checking [out, in, kernel, kernel] and [out].
  CausalConv2d(const WeightView& weights, const std::string& name, int64_t in_channels, int64_t out_channels,
               int64_t kernel, CausalityAxis axis);

  // [B, C_in, T, M] -> [B, C_out, T, M].
  Tensor forward(const Tensor& x) const;

 private:
  Tensor weight_, bias_;
  CausalityAxis axis_ = CausalityAxis::Height;
};

}  // namespace ltx2::audio_vae
