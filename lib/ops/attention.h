// Scaled dot-product attention, the one op every model attends through (a sequence-parallel
// strategy later wraps it rather than the models).
#pragma once

#include "core/tensor.h"

namespace ltx2::ops {

// q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv] -> [B, H, Tq, Dv].
// mask: undefined, or broadcastable to [B, H, Tq, Tk]: bool/u8 (true = attend) or float (added
// to the scores; -inf excludes). scale <= 0 means 1/sqrt(D). A query row whose keys are all
// excluded yields zeros (the reference's SDPA would give NaN; the pipelines never produce one).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask = {},
                 float scale = 0.f);

}  // namespace ltx2::ops
