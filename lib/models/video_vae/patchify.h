// The VAE's spatial patching (patch p, temporal patch 1). Its channel order differs from
// depth-to-space: channel = c*p*p + w_off*p + h_off (the H offset is fastest).
#pragma once

#include "core/tensor.h"

namespace ltx2::video_vae {

// [B, C, F, H*p, W*p] -> [B, C*p*p, F, H, W].
Tensor patchify(const Tensor& x, int64_t p);
// [B, C*p*p, F, H, W] -> [B, C, F, H*p, W*p].
Tensor unpatchify(const Tensor& x, int64_t p);

}  // namespace ltx2::video_vae
