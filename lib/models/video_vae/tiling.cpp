// Tile size configs, the decode tile plan and the tile blender.
#include "models/video_vae/tiling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::video_vae {

namespace {

constexpr float kMinWeight = 1e-8f;

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

Tensor mask_tensor(const std::vector<float>& m, int axis) {
  Shape s = {1, 1, 1, 1, 1};
  s[2 + axis] = static_cast<int64_t>(m.size());
  return Tensor::from_vector(m, s);
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

TileBlender::TileBlender(const DecodeTilePlan& plan, Device device)
    : plan_(plan),
      device_(device),
      min_weight_(Tensor::scalar(kMinWeight).to(device)),
      remaining_(plan.temporal_groups, 0),
      received_(plan.tiles.size(), false) {
  for (const auto& t : plan_.tiles) {
    remaining_[t.temporal_group]++;
    masks_.push_back({mask_tensor(t.masks[0], 0).to(device), mask_tensor(t.masks[1], 1).to(device),
                      mask_tensor(t.masks[2], 2).to(device)});
  }
  if (!plan_.tiles.empty()) current_ = make_buffer(0);
}

TileBlender::Buffer TileBlender::make_buffer(size_t group) const {
  const tiling::Range* f = nullptr;
  for (const auto& t : plan_.tiles)
    if (t.temporal_group == group) f = &t.out[0];
  const Shape& v = plan_.video_shape;
  Buffer b;
  b.start = f->start;
  b.end = f->stop;
  b.video = Tensor::zeros({v[0], v[1], b.end - b.start, v[3], v[4]}, DType::F32, device_);
  if (!plan_.masks_complementary)
    b.weight = Tensor::zeros({1, 1, b.end - b.start, v[3], v[4]}, DType::F32, device_);
  return b;
}

Tensor TileBlender::release(const Buffer& b, int64_t frames) const {
  Tensor chunk = b.video.slice(2, 0, frames);
  if (b.weight.defined()) chunk = ops::div(chunk, ops::maximum(b.weight.slice(2, 0, frames), min_weight_));
  return chunk.contiguous();
}

std::vector<Tensor> TileBlender::add(size_t tile_index, const Tensor& decoded) {
  LTX2_CHECK(tile_index < plan_.tiles.size() && !received_[tile_index],
             "tile blender: tile {} is out of range or was already added", tile_index);
  const tiling::Tile& tile = plan_.tiles[tile_index];
  LTX2_CHECK(tile.temporal_group == group_,
             "tile blender: tile {} belongs to temporal group {}, "
             "but group {} is not complete yet",
             tile_index, tile.temporal_group, group_);
  const auto& [fa, ha, wa] = tile.out;
  const Shape expected = {plan_.video_shape[0], plan_.video_shape[1], fa.length(), ha.length(), wa.length()};
  LTX2_CHECK(decoded.shape() == expected, "tile blender: tile {} is {}, expected {}", tile_index,
             decoded.str(), shape_str(expected));
  received_[tile_index] = true;

  const auto& [fm, hm, wm] = masks_[tile_index];
  const Tensor mask = ops::mul(ops::mul(fm, hm), wm);
  auto region = [&](const Tensor& buffer) {
    return buffer.slice(3, ha.start, ha.stop).slice(4, wa.start, wa.stop);
  };
  Tensor video_region = region(current_.video);
  video_region.copy_(ops::add(video_region, ops::mul(decoded, mask)));
  if (current_.weight.defined()) {
    Tensor weight_region = region(current_.weight);
    weight_region.copy_(ops::add(weight_region, mask));
  }

  std::vector<Tensor> chunks;
  if (--remaining_[group_] > 0) return chunks;
  if (group_ + 1 == plan_.temporal_groups) {
    chunks.push_back(release(current_, current_.end - current_.start));
    current_ = Buffer();
  } else {
    Buffer next = make_buffer(group_ + 1);
    const int64_t overlap = current_.end - next.start;
    if (overlap > 0) {
      const int64_t n = current_.end - current_.start;
      next.video.slice(2, 0, overlap).copy_(current_.video.slice(2, n - overlap, n));
      if (next.weight.defined())
        next.weight.slice(2, 0, overlap).copy_(current_.weight.slice(2, n - overlap, n));
    }
    const int64_t ready = next.start - current_.start;
    if (ready > 0) chunks.push_back(release(current_, ready));
    current_ = std::move(next);
  }
  ++group_;
  return chunks;
}

}  // namespace ltx2::video_vae
