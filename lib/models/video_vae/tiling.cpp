// Tile splitting, masks, the decode tile plan and the tile blender.
#include "models/video_vae/tiling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"

namespace ltx2::video_vae {

namespace {

constexpr float kMinWeight = 1e-8f;

// torch.linspace(start, end, steps) in float32 (steps >= 2): the step is applied from the nearer
// end, as torch does, so both endpoints are exact.
std::vector<float> linspace(float start, float end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[i] = i < half ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - 1 - i);
  return v;
}

// Latent-unit splitter of one axis; size 0 = untiled.
struct AxisSplit {
  int64_t size = 0, overlap = 0;
};

AxisSplit to_latent(const AxisTiling& t, int64_t factor, const char* axis) {
  if (t.tile_size == 0) return {};
  LTX2_CHECK(t.tile_size >= 2 * factor && t.tile_size % factor == 0,
             "tiled decode: {} tile size {} must be a multiple of {} and at least {}", axis, t.tile_size,
             factor, 2 * factor);
  LTX2_CHECK(t.overlap >= 0 && t.overlap % factor == 0 && t.overlap < t.tile_size,
             "tiled decode: {} overlap {} must be a multiple of {} below the tile size {}", axis, t.overlap,
             factor, t.tile_size);
  AxisSplit s{t.tile_size / factor, t.overlap / factor};
  s.size = std::max(s.size, std::max<int64_t>(2, s.overlap + 1));
  return s;
}

std::vector<AxisSlice> spatial_slices(int64_t length, const AxisSplit& s, int64_t factor) {
  std::vector<AxisSlice> out;
  if (s.size == 0) {
    out.push_back({0, length, 0, length * factor, std::vector<float>(length * factor, 1.f)});
    return out;
  }
  for (const TileInterval& i : split_by_size(length, s.size, s.overlap)) {
    const int64_t n = (i.end - i.start) * factor;
    out.push_back({i.start, i.end, i.start * factor, i.end * factor,
                   trapezoid_mask(n, i.left_ramp * factor, i.right_ramp * factor, false)});
  }
  return out;
}

std::vector<AxisSlice> temporal_slices(int64_t length, const AxisSplit& s, int64_t factor) {
  std::vector<AxisSlice> out;
  const int64_t full = 1 + factor * (length - 1);
  if (s.size == 0) {
    out.push_back({0, length, 0, full, std::vector<float>(full, 1.f)});
    return out;
  }
  for (const TileInterval& i : split_temporal_causal(length, s.size, s.overlap)) {
    const int64_t p0 = factor * i.start, p1 = 1 + factor * (i.end - 1);
    const int64_t left = i.left_ramp == 0 ? 0 : 1 + factor * (i.left_ramp - 1);
    out.push_back({i.start, i.end, p0, p1, trapezoid_mask(p1 - p0, left, factor * i.right_ramp, true)});
  }
  return out;
}

// Whether the masks of one axis sum to 1 at every pixel.
bool complementary(const std::vector<AxisSlice>& slices, int64_t full) {
  std::vector<double> sum(static_cast<size_t>(full), 0.0);
  for (const auto& s : slices)
    for (int64_t p = s.pixel_start; p < s.pixel_end; ++p) sum[p] += s.mask[p - s.pixel_start];
  return std::all_of(sum.begin(), sum.end(), [](double v) { return std::fabs(v - 1.0) < 1e-5; });
}

Tensor mask_tensor(const std::vector<float>& m, int axis) {
  Shape s = {1, 1, 1, 1, 1};
  s[2 + axis] = static_cast<int64_t>(m.size());
  return Tensor::from_vector(m, s);
}

}  // namespace

TileSizeConfig TileSizeConfig::defaults() {
  return {{80, 24}, {768, 64}, {768, 64}};
}

TileSizeConfig TileSizeConfig::from_long_side(const AxisTiling& long_side, int64_t height, int64_t width,
                                              const VideoScaleFactors& factors, const AxisTiling& frames) {
  LTX2_CHECK(height >= 1 && width >= 1 && long_side.tile_size > 0,
             "tiling: long-side tiles need a tiled long side and a positive size, got {}x{}", height, width);
  const int64_t span = std::max(height, width);
  auto axis_size = [&](int64_t axis, int64_t factor) {
    const int64_t axis_lat = axis / factor, long_lat = span / factor;
    const int64_t size_lat = long_side.tile_size / factor, overlap_lat = long_side.overlap / factor;
    // Python's round(): halves go to the even neighbour, as nearbyint does by default.
    const int64_t scaled = static_cast<int64_t>(std::nearbyint(
        static_cast<double>(size_lat) * static_cast<double>(axis_lat) / static_cast<double>(long_lat)));
    const int64_t tile_lat = std::max(std::max<int64_t>(2, overlap_lat + 1), scaled);
    return std::max(tile_lat * factor, std::max(2 * factor, long_side.overlap + factor));
  };
  return {frames,
          {axis_size(height, factors.height), long_side.overlap},
          {axis_size(width, factors.width), long_side.overlap}};
}

TileSizeConfig TileSizeConfig::automatic(int64_t height, int64_t width, const VideoScaleFactors& factors) {
  return from_long_side({768, 64}, height, width, factors, {80, 24});
}

std::vector<TileInterval> split_by_size(int64_t length, int64_t size, int64_t overlap) {
  LTX2_CHECK(size > overlap && overlap >= 0 && length > 0, "tile split: size {} overlap {} length {}", size,
             overlap, length);
  if (length <= size) return {{0, length, 0, 0}};
  const int64_t stride = size - overlap;
  const int64_t n = (length + size - 2 * overlap - 1) / stride;
  std::vector<TileInterval> out;
  for (int64_t i = 0; i < n; ++i) {
    TileInterval t{i * stride, std::min(length, i * stride + size), i == 0 ? 0 : overlap,
                   i == n - 1 ? 0 : overlap};
    if (i == n - 1) t.end = length;
    out.push_back(t);
  }
  return out;
}

std::vector<TileInterval> split_temporal_causal(int64_t length, int64_t size, int64_t overlap) {
  std::vector<TileInterval> out = split_by_size(length, size, overlap);
  for (size_t i = 1; i < out.size(); ++i) {
    out[i].start -= 1;
    out[i].left_ramp += 1;
  }
  return out;
}

std::vector<float> trapezoid_mask(int64_t n, int64_t left, int64_t right, bool starts_from_zero) {
  std::vector<float> m(static_cast<size_t>(n), 1.f);
  if (left > 0) {
    std::vector<float> ramp = starts_from_zero ? linspace(0.f, 1.f, left + 1) : linspace(0.f, 1.f, left + 2);
    const int64_t first = starts_from_zero ? 0 : 1;
    for (int64_t i = 0; i < std::min(left, n); ++i) m[i] *= ramp[first + i];
  }
  if (right > 0) {
    std::vector<float> ramp = linspace(1.f, 0.f, right + 2);
    for (int64_t i = 0; i < right; ++i) {
      const int64_t at = n - right + i;
      if (at >= 0) m[at] *= ramp[1 + i];
    }
  }
  for (float& v : m) v = std::clamp(v, 0.f, 1.f);
  return m;
}

DecodeTilePlan plan_tiled_decode(const Shape& latent_shape, int64_t out_channels,
                                 const TileSizeConfig& config, const VideoScaleFactors& factors) {
  LTX2_CHECK(latent_shape.size() == 5, "tiled decode: latent shape {} is not [B, C, F, H, W]",
             shape_str(latent_shape));
  const int64_t F = latent_shape[2], H = latent_shape[3], W = latent_shape[4];
  DecodeTilePlan plan;
  plan.config = config;
  plan.factors = factors;
  plan.latent_shape = latent_shape;
  plan.video_shape = {latent_shape[0], out_channels, 1 + factors.time * (F - 1), H * factors.height,
                      W * factors.width};
  const auto fs = temporal_slices(F, to_latent(config.frames, factors.time, "frames"), factors.time);
  const auto hs = spatial_slices(H, to_latent(config.height, factors.height, "height"), factors.height);
  const auto ws = spatial_slices(W, to_latent(config.width, factors.width, "width"), factors.width);
  plan.masks_complementary = complementary(fs, plan.video_shape[2]) &&
                             complementary(hs, plan.video_shape[3]) && complementary(ws, plan.video_shape[4]);
  plan.temporal_groups = fs.size();
  for (size_t f = 0; f < fs.size(); ++f)
    for (const auto& h : hs)
      for (const auto& w : ws) plan.tiles.push_back({{fs[f], h, w}, f});
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
    const auto& [fa, ha, wa] = t.axes;
    masks_.push_back({mask_tensor(fa.mask, 0).to(device), mask_tensor(ha.mask, 1).to(device),
                      mask_tensor(wa.mask, 2).to(device)});
  }
  if (!plan_.tiles.empty()) current_ = make_buffer(0);
}

TileBlender::Buffer TileBlender::make_buffer(size_t group) const {
  const AxisSlice* f = nullptr;
  for (const auto& t : plan_.tiles)
    if (t.temporal_group == group) f = &t.axes[0];
  const Shape& v = plan_.video_shape;
  Buffer b;
  b.start = f->pixel_start;
  b.end = f->pixel_end;
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
  const DecodeTile& tile = plan_.tiles[tile_index];
  LTX2_CHECK(tile.temporal_group == group_,
             "tile blender: tile {} belongs to temporal group {}, "
             "but group {} is not complete yet",
             tile_index, tile.temporal_group, group_);
  const auto& [fa, ha, wa] = tile.axes;
  const Shape expected = {plan_.video_shape[0], plan_.video_shape[1], fa.pixel_end - fa.pixel_start,
                          ha.pixel_end - ha.pixel_start, wa.pixel_end - wa.pixel_start};
  LTX2_CHECK(decoded.shape() == expected, "tile blender: tile {} is {}, expected {}", tile_index,
             decoded.str(), shape_str(expected));
  received_[tile_index] = true;

  const auto& [fm, hm, wm] = masks_[tile_index];
  const Tensor mask = ops::mul(ops::mul(fm, hm), wm);
  auto region = [&](const Tensor& buffer) {
    return buffer.slice(3, ha.pixel_start, ha.pixel_end).slice(4, wa.pixel_start, wa.pixel_end);
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
