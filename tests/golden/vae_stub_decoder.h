// The stub video decoder of the vae_rank_sim fixtures (case.json "stub_decoder"): for a latent
// tile [1, C, f, h, w] it returns pixels [(f - 1) * st + 1, h * sh, w * sw, 3] =
//   0.8 * sigmoid(U(latent[0, :3])) + 0.2 * sigmoid(mean(latent tile))
// with U the causal nearest upsampling (latent frame 0 -> pixel frame 0, frame i -> st frames).
#pragma once

#include "golden/tile_case_util.h"

namespace ltx2::golden {

Tensor vae_stub_decode(const Tensor& latent_tile, const VaeScale& scale);

}  // namespace ltx2::golden
