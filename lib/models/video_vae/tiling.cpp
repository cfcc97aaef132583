// Tile size configs and the decode tile plan.
#include "models/video_vae/tiling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ltx2::video_vae {

namespace {

// A tile size config's axis in latent cells; refuses an illegal one naming the axis.
AxisTiling to_latent(const AxisTiling& t, int64_t factor, const char* axis) {
  if (!t.is_tiled()) return t;
  LTX2_CHECK(t.value >= 2 * factor && t.value % factor == 0,
             "tiled decode: {} tile size {} must be a multiple of {} and at least {}", axis, t.value, factor,
             2 * factor);
  LTX2_CHECK(t.overlap >= 0 && t.overlap % factor == 0 && t.overlap < t.value,
             "tiled decode: {} overlap {} must be a multiple of {} below the tile size {}", axis, t.overlap,
             factor, t.value);
  const int64_t overlap = t.overlap / factor;
  return AxisTiling::by_size(std::max(t.value / factor, std::max<int64_t>(2, overlap + 1)), overlap);
}

}  // namespace

TileSizeConfig TileSizeConfig::defaults() {
  return {AxisTiling::by_size(80, 24), AxisTiling::by_size(768, 64), AxisTiling::by_size(768, 64)};
}

TileSizeConfig TileSizeConfig::from_long_side(const AxisTiling& long_side, int64_t height, int64_t width,
                                              const VideoScaleFactors& factors, const AxisTiling& frames) {
  LTX2_CHECK(height >= 1 && width >= 1 && long_side.is_tiled(),
             "tiling: long-side tiles need a tiled long side and a positive size, got {}x{}", height, width);
  const int64_t span = std::max(height, width);
  auto axis_size = [&](int64_t axis, int64_t factor) {
    const int64_t axis_lat = axis / factor, long_lat = span / factor;
    const int64_t size_lat = long_side.value / factor, overlap_lat = long_side.overlap / factor;
    // Python's round(): halves go to the even neighbour, as nearbyint does by default.
    const int64_t scaled = static_cast<int64_t>(std::nearbyint(
        static_cast<double>(size_lat) * static_cast<double>(axis_lat) / static_cast<double>(long_lat)));
    const int64_t tile_lat = std::max(std::max<int64_t>(2, overlap_lat + 1), scaled);
    return std::max(tile_lat * factor, std::max(2 * factor, long_side.overlap + factor));
  };
  return {frames, AxisTiling::by_size(axis_size(height, factors.height), long_side.overlap),
          AxisTiling::by_size(axis_size(width, factors.width), long_side.overlap)};
}

TileSizeConfig TileSizeConfig::automatic(int64_t height, int64_t width, const VideoScaleFactors& factors) {
  return from_long_side(AxisTiling::by_size(768, 64), height, width, factors, AxisTiling::by_size(80, 24));
}

DecodeTilePlan plan_tiled_decode(const Shape& latent_shape, int64_t out_channels,
                                 const TileSizeConfig& config, const VideoScaleFactors& factors) {
  LTX2_CHECK(latent_shape.size() == 5, "tiled decode: latent shape {} is not [B, C, F, H, W]",
             shape_str(latent_shape));
  DecodeTilePlan plan;
  static_cast<tiling::TilePlan&>(plan) = tiling::plan_tiles(
      {latent_shape[2], latent_shape[3], latent_shape[4]},
      {to_latent(config.frames, factors.time, "frames"), to_latent(config.height, factors.height, "height"),
       to_latent(config.width, factors.width, "width")},
      {{factors.time, factors.height, factors.width}, true, tiling::RampValues::Linspace});
  plan.config = config;
  plan.factors = factors;
  plan.latent_shape = latent_shape;
  plan.video_shape = {latent_shape[0], out_channels, plan.out_extent[0], plan.out_extent[1],
                      plan.out_extent[2]};
  return plan;
}

}  // namespace ltx2::video_vae
