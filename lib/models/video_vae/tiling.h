// The tile sizes and blending of the reference's single-process tiled decode (tiling.py), kept
// apart from the decoder so a distributed decode can hand tiles out and feed results back.
//
// Sizes are configured in pixels / frames (tiles by size); the plan (tiling/tile_plan.h) splits
// each tiled axis on the latent grid (frames: causal split, where every tile after the first
// starts one latent frame early) and maps each tile to its pixel box and trapezoid blend masks.
// tiling/tile_blender.h blends the decoded tiles.
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "io/configs/video_vae_config.h"
#include "tiling/tile_plan.h"

namespace ltx2::video_vae {

using tiling::AxisTiling;

struct TileSizeConfig {
  AxisTiling frames, height, width;

  // TileSizeConfig.default(): frames 80/24, height and width 768/64 (the tiled-encode default).
  static TileSizeConfig defaults();
  // TileSizeConfig.from_long_side(): the longer spatial axis of a height x width video gets
  // long_side's tile, the other one that tile scaled by the aspect ratio on the latent grid (Python
  // round, at least max(2, overlap+1) latents and max(2 factors, overlap + 1 factor) pixels);
  // both share long_side's overlap.
  static TileSizeConfig from_long_side(const AxisTiling& long_side, int64_t height, int64_t width,
                                       const VideoScaleFactors& factors, const AxisTiling& frames);
  // The pipelines' automatic decode tiling for the conv VAE: from_long_side((768, 64), ...,
  // frames (80, 24)).
  static TileSizeConfig automatic(int64_t height, int64_t width, const VideoScaleFactors& factors);
};

// The decode's tile plan (tiling/tile_plan.h: latent boxes in, pixel boxes out, the linspace
// masks of tiling.py) and what it was made from: plan_tiled_decode(latent_shape, video_shape[1],
// config, factors) makes it again (a distributed decode rebuilds it in the process that blends).
struct DecodeTilePlan : tiling::TilePlan {
  TileSizeConfig config;
  VideoScaleFactors factors;
  Shape latent_shape;  // [B, C, F, H, W]
  Shape video_shape;   // [B, out_channels, F', H', W']
};

// Refuses an illegal config naming the axis (sizes must be multiples of the scale factor, at least
// two of them, and larger than the overlap).
DecodeTilePlan plan_tiled_decode(const Shape& latent_shape, int64_t out_channels,
                                 const TileSizeConfig& config, const VideoScaleFactors& factors);

}  // namespace ltx2::video_vae
