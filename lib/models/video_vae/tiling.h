// The tile plan and blending of the reference's single-process tiled decode (tiling.py), kept
// apart from the decoder so a distributed decode can hand tiles out and feed results back.
//
// Sizes are configured in pixels / frames; each tiled axis is split on the latent grid (frames:
// causal split, where every tile after the first starts one latent frame early), each tile's
// pixel output slice and its trapezoid blend mask follow from its latent interval, and tiles are
// ordered with frames slowest. The blender accumulates mask-weighted tiles per temporal group and
// releases frames as soon as no later group can touch them.
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "io/configs/video_vae_config.h"

namespace ltx2::video_vae {

struct AxisTiling {
  int64_t tile_size = 0;  // pixels / frames; 0 = axis not tiled
  int64_t overlap = 0;
};

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

// A latent interval [start, end) with blend ramps (latent units).
struct TileInterval {
  int64_t start = 0, end = 0, left_ramp = 0, right_ramp = 0;
};

std::vector<TileInterval> split_by_size(int64_t length, int64_t size, int64_t overlap);
// split_by_size, then every interval after the first starts one earlier with a longer left ramp.
std::vector<TileInterval> split_temporal_causal(int64_t length, int64_t size, int64_t overlap);
// ones(n) with a rising left ramp of `left` and a falling right ramp of `right` entries; the left
// ramp starts at exactly 0 when starts_from_zero.
std::vector<float> trapezoid_mask(int64_t n, int64_t left, int64_t right, bool starts_from_zero);

struct AxisSlice {
  int64_t latent_start = 0, latent_end = 0;
  int64_t pixel_start = 0, pixel_end = 0;
  std::vector<float> mask;  // pixel_end - pixel_start blend weights
};

struct DecodeTile {
  std::array<AxisSlice, 3> axes;  // frames, height, width
  size_t temporal_group = 0;      // index of its temporal output slice
};

struct DecodeTilePlan {
  // What the plan was made from: plan_tiled_decode(latent_shape, video_shape[1], config, factors)
  // makes it again (a distributed decode rebuilds it in the process that blends).
  TileSizeConfig config;
  VideoScaleFactors factors;
  Shape latent_shape;             // [B, C, F, H, W]
  Shape video_shape;              // [B, out_channels, F', H', W']
  std::vector<DecodeTile> tiles;  // frames slowest, then height, then width
  size_t temporal_groups = 0;
  bool masks_complementary = true;  // neighbouring masks sum to 1: no weight normalisation
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
