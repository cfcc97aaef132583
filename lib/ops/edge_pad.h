// Padding one dimension by the border modes of PyTorch's padding_mode / F.pad: zeros, reflect
// (mirror excluding the edge sample), replicate (repeat the edge sample) and circular (wrap).
#pragma once

#include <string>

#include "core/tensor.h"

namespace ltx2::ops {

enum class PadMode : int { Zeros, Reflect, Replicate, Circular };

// "zeros", "reflect", "replicate", "circular".
const char* pad_mode_name(PadMode mode);

// Pads dimension `dim` of x with `before` and `after` elements chosen by `mode`. Reflect needs
// before, after < size(dim); circular needs before, after <= size(dim).
Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, PadMode mode);

}  // namespace ltx2::ops
