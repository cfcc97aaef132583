// The tile sizes and blending of the reference's single-process tiled decode (tiling.py), kept
// apart from the decoder so a distributed decode can hand tiles out and feed results back.
//
// Sizes are configured in pixels / frames (tiles by size); the plan (tiling/tile_plan.h) splits
// each tiled axis on the latent grid (frames: causal split, where every tile after the first
// starts one latent frame early) and maps each tile to its pixel box and trapezoid blend masks.
// The blender accumulates mask-weighted tiles per temporal group and releases frames as soon as no
// later group can touch them.
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

// Blends decoded tiles of a plan. Tiles of one temporal group may arrive in any order; groups must
// arrive in order. add() returns the chunks of finished frames (in time order, possibly none);
// their concatenation over dim 2 is the whole video once every tile was added. The blend buffers
// and the chunks are float32 on `device` (where the tiles are decoded); the masks are uploaded once,
// here, so adding a tile copies nothing between host and device.
class TileBlender {
 public:
  explicit TileBlender(const DecodeTilePlan& plan, Device device = Device::cpu());
  std::vector<Tensor> add(size_t tile_index, const Tensor& decoded);
  bool done() const { return group_ == plan_.temporal_groups; }

 private:
  struct Buffer {
    Tensor video, weight;  // [B, C, n, H, W] and [1, 1, n, H, W] (weight only when normalising)
    int64_t start = 0, end = 0;
  };
  Buffer make_buffer(size_t group) const;
  Tensor release(const Buffer& b, int64_t frames) const;

  DecodeTilePlan plan_;
  Device device_;
  std::vector<std::array<Tensor, 3>> masks_;  // per tile and axis: [1, 1, f|1, h|1, w|1] f32 on device_
  Tensor min_weight_;                         // 0-d on device_
  std::vector<size_t> remaining_;             // tiles still missing per group
  std::vector<bool> received_;
  size_t group_ = 0;
  Buffer current_;
};

}  // namespace ltx2::video_vae
