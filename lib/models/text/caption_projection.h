// The 19B DiT's caption projection (PixArtAlphaTextProjection): linear_1 (caption_channels ->
// inner) -> gelu(tanh) -> linear_2 (inner -> inner), both with bias. It does not depend on the
// timestep, so a pipeline applies it once per prompt to the connector's output.
#pragma once

#include "core/tensor.h"
#include "io/weights.h"

namespace ltx2 {

class CaptionProjection {
 public:
  // `w`: window onto "caption_projection." or "audio_caption_projection.", loaded in `dtype` on `device`.
  CaptionProjection(const WeightView& w, int64_t in_channels, int64_t inner, DType dtype = DType::F32,
                    Device device = Device::cpu());
  Tensor forward(const Tensor& x) const;

 private:
  Tensor w1_, b1_, w2_, b2_;
};

}  // namespace ltx2
