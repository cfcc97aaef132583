// The diffusion decoder's tile plan and its recommended tiling.
#include "models/video_vae/diffusion_tiling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace ltx2::video_vae {

namespace {

constexpr std::array<const char*, 3> kAxisNames = {"frames", "height", "width"};
constexpr Dims3 kVideoScaleFactors = {8, 32, 32};  // VIDEO_SCALE_FACTORS
// recommended_decode_tiling_config for DiffVAEMode chunked_eager without natten.
constexpr double kStage5Coefficient = 5;
constexpr uint64_t kSafetyBytes = 1ull << 30;
constexpr uint64_t kModelBytesFloor = 1ull << 30;
constexpr uint64_t kElementBytes = 2;  // bf16 features, fp16 accumulator

int64_t round_up(int64_t v, int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// compute_tile_halos: one-sided halos (stage 4, stage 5) in stage-4 input cells.
std::pair<Dims3, Dims3> tile_halos(const DiffusionVideoDecoderConfig& c) {
  const Dims3& k4 = c.stage_kernels[3];
  const Dims3& st = c.upsamples[3].stride;
  Dims3 halo4{}, halo5{};
  for (int a = 0; a < 3; ++a) {
    halo4[a] = c.stage_depths[3] * (k4[a] / 2);
    halo5[a] = ceil_div(c.stage_depths.back() * (c.stage5_kernel[a] / 2), st[a]);
  }
  return {halo4, halo5};
}

// compute_tile_min_size: stage-4 cells so that stages 4 and 5 each see at least their kernel.
Dims3 min_tile_cells(const DiffusionVideoDecoderConfig& c) {
  Dims3 out{};
  for (int a = 0; a < 3; ++a)
    out[a] = std::max(c.stage_kernels[3][a], ceil_div(c.stage5_kernel[a], c.upsamples[3].stride[a]));
  return out;
}

// A stage-4 interval's pixels (_propagate_interval_through_upsample_hops): times the stride (and
// the patch in H, W); in time with stride 2, one frame less at the end and past the origin.
tiling::Interval to_pixels(const tiling::Interval& iv, int64_t scale, bool time_doubles) {
  tiling::Interval px{iv.start * scale, iv.stop * scale, iv.left_ramp * scale, iv.right_ramp * scale};
  if (time_doubles) {
    px.stop -= 1;
    if (iv.start != 0) px.start -= 1;
  }
  return px;
}

// Per axis, the masks of the distinct out ranges sum to 1 within 1e-5 (masks_are_complementary).
bool masks_complementary(const tiling::TilePlan& plan) {
  for (int a = 0; a < 3; ++a) {
    std::vector<float> sum(static_cast<size_t>(plan.out_extent[a]), 0.f);
    std::vector<std::pair<int64_t, int64_t>> seen;
    for (const tiling::Tile& t : plan.tiles) {
      const std::pair<int64_t, int64_t> key{t.out[a].start, t.out[a].stop};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      for (int64_t i = 0; i < t.out[a].length(); ++i)
        sum[static_cast<size_t>(t.out[a].start + i)] += t.masks[a][i];
    }
    for (float s : sum)
      if (std::abs(s - 1.f) > 1e-5f) return false;
  }
  return true;
}

// stage4_feature_bytes: the stages 1-3 output of the whole video (with the repeated trailing
// frames), resident for the whole tiled decode.
uint64_t stage4_feature_bytes(const DiffusionVideoDecoderConfig& c, int64_t height, int64_t width,
                              int64_t frames) {
  const Dims3 cells =
      c.stage4_cells({(frames - 1) / kVideoScaleFactors[0] + 1 + c.trailing_pad_latent_frames(),
                      height / kVideoScaleFactors[1], width / kVideoScaleFactors[2]});
  return static_cast<uint64_t>(cells[0] * cells[1] * cells[2] * c.stage_channels[3]) * kElementBytes;
}

// _axis_candidates: (tile size, tile count) for every size on `multiple`'s grid from min_size up to
// the axis rounded up.
std::vector<std::pair<int64_t, int64_t>> axis_candidates(int64_t length, int64_t overlap, int64_t min_size,
                                                         int64_t multiple) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t max_size = std::max(round_up(length, multiple), min_size);
  for (int64_t size = min_size; size < max_size + multiple; size += multiple) {
    if (size <= overlap) continue;
    out.emplace_back(
        size,
        static_cast<int64_t>(tiling::split_axis(length, tiling::AxisTiling::by_size(size, overlap)).size()));
  }
  return out;
}

}  // namespace

Dims3 diffusion_pixel_scale(const DiffusionVideoDecoderConfig& c) {
  const Dims3& st = c.upsamples[3].stride;
  return {st[0], st[1] * c.patch_size, st[2] * c.patch_size};
}

std::pair<int64_t, int64_t> diffusion_min_overlaps(const DiffusionVideoDecoderConfig& c) {
  const auto [halo4, halo5] = tile_halos(c);
  const Dims3 scale = diffusion_pixel_scale(c);
  const auto dominant = [&](int a) { return std::max(halo4[a], halo5[a]); };
  return {round_up(dominant(0) * scale[0], 8), round_up(std::max(dominant(1), dominant(2)) * scale[1], 32)};
}

tiling::TilePlan plan_diffusion_tiles(const DiffusionVideoDecoderConfig& c, const Dims3& stage4,
                                      const Dims3& pixels, const TileSizeConfig& tiles) {
  const Dims3 scale = diffusion_pixel_scale(c), min_cells = min_tile_cells(c);
  const auto [min_overlap_frames, min_overlap_pixels] = diffusion_min_overlaps(c);
  const std::array<const tiling::AxisTiling*, 3> asked = {&tiles.frames, &tiles.height, &tiles.width};
  std::array<std::vector<tiling::Interval>, 3> cells, px;
  for (int a = 0; a < 3; ++a) {
    const tiling::AxisTiling& t = *asked[a];
    LTX2_CHECK(!t.is_tiled() || t.by == tiling::AxisTiling::By::Size,
               "diffusion decoder tiling: {} must be tiled by size", kAxisNames[a]);
    if (t.is_tiled()) {
      const int64_t f = scale[a], min_overlap = a == 0 ? min_overlap_frames : min_overlap_pixels;
      const char* unit = a == 0 ? "frames" : "px";
      LTX2_CHECK(t.value >= 2 * f && t.value % f == 0 && t.overlap % f == 0,
                 "diffusion decoder tiling: {} tile {} / overlap {} {} must be multiples of {} (the tile at "
                 "least {})",
                 kAxisNames[a], t.value, t.overlap, unit, f, 2 * f);
      LTX2_CHECK(t.overlap >= min_overlap,
                 "diffusion decoder tiling: {} overlap {} {} is below the required {} {}", kAxisNames[a],
                 t.overlap, unit, min_overlap, unit);
      // to_splitters: sizes in cells, the tile at least max(2, overlap + 1) cells.
      const int64_t overlap = t.overlap / f, size = std::max({int64_t{2}, overlap + 1, t.value / f});
      cells[a] = tiling::split_axis(stage4[a], tiling::AxisTiling::by_size(size, overlap, min_cells[a]));
    } else {
      cells[a] = {{0, stage4[a], 0, 0}};
    }
    for (const tiling::Interval& iv : cells[a])
      px[a].push_back(to_pixels(iv, scale[a], a == 0 && scale[0] == 2));
    LTX2_CHECK(px[a].front().start == 0 && px[a].back().stop == pixels[a],
               "diffusion decoder tiling: the {} tiles cover pixels [{}, {}) of {}", kAxisNames[a],
               px[a].front().start, px[a].back().stop, pixels[a]);
  }
  tiling::TilePlan plan;
  plan.in_extent = stage4;
  plan.out_extent = pixels;
  plan.temporal_groups = cells[0].size();
  for (size_t i = 0; i < cells[0].size(); ++i)
    for (size_t j = 0; j < cells[1].size(); ++j)
      for (size_t k = 0; k < cells[2].size(); ++k) {
        const std::array<size_t, 3> idx = {i, j, k};
        tiling::Tile tile;
        tile.temporal_group = i;
        for (int a = 0; a < 3; ++a) {
          const tiling::Interval& p = px[a][idx[a]];
          tile.in[a] = cells[a][idx[a]];
          tile.out[a] = {p.start, p.stop};
          tile.masks[a] = tiling::trapezoid_mask(p.length(), p.left_ramp, p.right_ramp, false,
                                                 tiling::RampValues::Linspace);
        }
        plan.tiles.push_back(std::move(tile));
      }
  plan.masks_complementary = masks_complementary(plan);
  return plan;
}

TileSizeConfig recommend_diffusion_tiling(const DiffusionVideoDecoderConfig& c, int64_t height, int64_t width,
                                          int64_t frames, uint64_t free_bytes, uint64_t model_bytes) {
  LTX2_CHECK(height >= 1 && width >= 1 && frames >= 1, "diffusion decoder tiling: video {}x{}x{} is empty",
             height, width, frames);
  const auto [overlap_t, overlap_hw] = diffusion_min_overlaps(c);
  const Dims3 scale = diffusion_pixel_scale(c), min_cells = min_tile_cells(c);
  Dims3 step{}, min_px{};
  for (int a = 0; a < 3; ++a) {
    step[a] = std::lcm(scale[a], kVideoScaleFactors[a]);
    const int64_t overlap = a == 0 ? overlap_t : overlap_hw, floor = a == 0 ? 16 : 64;
    // Twice the overlap so both ramps fit (complementary masks need no weight buffer).
    min_px[a] = round_up(
        std::max({2 * scale[a], 2 * overlap, round_up(min_cells[a] * scale[a], scale[a]), floor}), step[a]);
  }
  const uint64_t s4_bytes = stage4_feature_bytes(c, height, width, frames);
  const uint64_t held = std::max(model_bytes, kModelBytesFloor) + kSafetyBytes + s4_bytes;
  const uint64_t usable = free_bytes > held ? free_bytes - held : 0;
  const double s5_bytes_per_token =
      std::max(1.0, static_cast<double>(c.diffusion_channels()) * kElementBytes * kStage5Coefficient);
  const uint64_t acc_bytes_per_pixel = static_cast<uint64_t>(c.out_channels) * kElementBytes;

  const auto t_cands = axis_candidates(frames, overlap_t, min_px[0], step[0]);
  const auto h_cands = axis_candidates(height, overlap_hw, min_px[1], step[1]);
  const auto w_cands = axis_candidates(width, overlap_hw, min_px[2], step[2]);
  // (waste, -volume, tile count, t, h, w): the least overlap recomputation, then the fewest launches.
  std::vector<std::tuple<double, int64_t, int64_t, int64_t, int64_t, int64_t>> scored;
  for (const auto& [tile_t, n_t] : t_cands) {
    // The current group's buffer and the previous group's still-live frames.
    const uint64_t acc_bytes = static_cast<uint64_t>(2 * tile_t * height * width) * acc_bytes_per_pixel;
    if (acc_bytes >= usable) continue;
    const auto max_tokens =
        static_cast<int64_t>(std::floor(static_cast<double>(usable - acc_bytes) / s5_bytes_per_token));
    for (const auto& [tile_h, n_h] : h_cands)
      for (const auto& [tile_w, n_w] : w_cands) {
        const int64_t tokens = tile_t * std::max<int64_t>(1, tile_h / c.patch_size) *
                               std::max<int64_t>(1, tile_w / c.patch_size);
        if (tokens > max_tokens) continue;
        const double waste = static_cast<double>(n_t * n_h * n_w * tile_t * tile_h * tile_w) /
                             static_cast<double>(std::max<int64_t>(1, frames * height * width));
        scored.emplace_back(waste, -tile_t * tile_h * tile_w, n_t * n_h * n_w, tile_t, tile_h, tile_w);
      }
  }
  LTX2_CHECK(
      !scored.empty(),
      "diffusion decoder tiling: no decode tile of at least {}f x {}x{}px (overlaps {} frames, {} px) fits "
      "{:.2f} GiB of free device memory for a {}x{}x{} video (the stage-4 features alone take {:.2f} GiB); "
      "free memory (--gpu-memory) or lower the resolution",
      min_px[0], min_px[1], min_px[2], overlap_t, overlap_hw, static_cast<double>(free_bytes) / (1ull << 30),
      height, width, frames, static_cast<double>(s4_bytes) / (1ull << 30));
  const auto best = *std::min_element(scored.begin(), scored.end());
  TileSizeConfig out;
  out.frames = tiling::AxisTiling::by_size(std::get<3>(best), overlap_t);
  out.height = tiling::AxisTiling::by_size(std::get<4>(best), overlap_hw);
  out.width = tiling::AxisTiling::by_size(std::get<5>(best), overlap_hw);
  return out;
}

}  // namespace ltx2::video_vae
