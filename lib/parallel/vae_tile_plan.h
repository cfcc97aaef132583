// The reference's distributed video VAE decode (multigpu.md 5.1-5.2), which `--vae-tiles` asks
// for: its tile plan (a tiling::TilePlan: latent tiles with a causal temporal split, their pixel
// boxes and blend masks), the order its driver blends the ranks' tiles in, and the conversions
// between the decoded tiles as they travel and the blender (tiling/tile_blender.h).
//
// Decoded tiles travel as [frames, height, width, channels]; the pixel grid of a latent (F, H, W)
// is ((F - 1) * time + 1, H * height, W * width).
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "tiling/tile_plan.h"

namespace ltx2::parallel {

// The reference's plan (multigpu.md 5.1): the latent grid split by `tiling`, the time axis causal,
// pixel boxes scaled by the VAE's (time, height, width) factors, the multi-GPU wrappers' masks.
tiling::TilePlan plan_vae_tiles(const tiling::GridExtent& latent, const tiling::GridTiling& tiling,
                                const std::array<int64_t, 3>& scale);

// Tile indices in blending order: by temporal group (the blender takes groups in order), then by
// rank, then each rank's own order (the reference's assembly order, multigpu.md 5.2), so that
// each pixel's sum has one order whatever arrives first.
std::vector<int64_t> assembly_order(const tiling::TilePlan& plan, int world_size);

// A decoded tile [F, H, W, C] of the decoder's values in [-1, 1] (CPU, f32 or bf16) -> [1, C, F, H,
// W] float32 in [0, 1], each value through ops::from_vae_range: the reference maps (and clamps)
// every tile before it blends them.
Tensor decoded_tile_to_unit(const Tensor& pixels);
// Blended frames [1, C, n, H, W] float32 in [0, 1] (CPU) -> [n, H, W, C] uint8 (ops::unit_to_u8).
Tensor unit_frames_to_rgb8(const Tensor& frames);

}  // namespace ltx2::parallel
