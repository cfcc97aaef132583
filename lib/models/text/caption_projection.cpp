// Caption projection MLP (see caption_projection.h).
#include "models/text/caption_projection.h"

#include "ops/elementwise.h"
#include "ops/linear.h"

namespace ltx2 {

CaptionProjection::CaptionProjection(const WeightView& w, int64_t in_channels, int64_t inner, DType dtype,
                                     Device device)
    : w1_(w.load("linear_1.weight", {inner, in_channels}, dtype, device)),
      b1_(w.load("linear_1.bias", {inner}, dtype, device)),
      w2_(w.load("linear_2.weight", {inner, inner}, dtype, device)),
      b2_(w.load("linear_2.bias", {inner}, dtype, device)) {}

Tensor CaptionProjection::forward(const Tensor& x) const {
  return ops::linear(ops::gelu_tanh(ops::linear(x, w1_, b1_)), w2_, b2_);
}

}  // namespace ltx2
