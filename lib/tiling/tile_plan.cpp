// The Cartesian tile plan: per-axis splits mapped to output cells with their masks.
#include "tiling/tile_plan.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ltx2::tiling {

namespace {

struct AxisTile {
  Interval in;
  Range out;
  std::vector<float> mask;
};

AxisTile map_axis(const Interval& i, int64_t k, bool causal, RampValues ramps) {
  if (causal) {
    const Range out{k * i.start, 1 + k * (i.stop - 1)};
    const int64_t left = i.left_ramp == 0 ? 0 : 1 + k * (i.left_ramp - 1);
    return {i, out, trapezoid_mask(out.length(), left, k * i.right_ramp, true, ramps)};
  }
  const Range out{k * i.start, k * i.stop};
  return {i, out, trapezoid_mask(out.length(), k * i.left_ramp, k * i.right_ramp, false, ramps)};
}

// Whether the masks of one axis's tiles sum to 1 at every output cell.
bool complementary(const std::vector<AxisTile>& tiles, int64_t extent) {
  std::vector<double> sum(static_cast<size_t>(extent), 0.0);
  for (const AxisTile& t : tiles)
    for (int64_t p = t.out.start; p < t.out.stop; ++p) sum[p] += t.mask[p - t.out.start];
  return std::all_of(sum.begin(), sum.end(), [](double v) { return std::fabs(v - 1.0) < 1e-5; });
}

}  // namespace

TilePlan plan_tiles(const GridExtent& in, const GridTiling& tiling, const GridMapping& mapping) {
  LTX2_CHECK(in[0] >= 1 && in[1] >= 1 && in[2] >= 1, "tile plan: empty grid {}x{}x{}", in[0], in[1], in[2]);
  TilePlan plan;
  plan.in_extent = in;
  std::array<std::vector<AxisTile>, 3> axes;
  for (int a = 0; a < 3; ++a) {
    const bool causal = a == 0 && mapping.causal_time;
    const int64_t k = mapping.scale[a];
    plan.out_extent[a] = causal ? 1 + k * (in[a] - 1) : k * in[a];
    for (const Interval& i : split_axis(in[a], tiling[a], causal))
      axes[a].push_back(map_axis(i, k, causal, mapping.ramps));
    plan.masks_complementary = plan.masks_complementary && complementary(axes[a], plan.out_extent[a]);
  }
  plan.temporal_groups = axes[0].size();
  for (size_t f = 0; f < axes[0].size(); ++f)
    for (const AxisTile& h : axes[1])
      for (const AxisTile& w : axes[2])
        plan.tiles.push_back({{axes[0][f].in, h.in, w.in},
                              {axes[0][f].out, h.out, w.out},
                              {axes[0][f].mask, h.mask, w.mask},
                              f});
  return plan;
}

std::vector<int64_t> tiles_for_rank(int64_t num_tiles, int rank, int world_size) {
  LTX2_CHECK(world_size >= 1 && rank >= 0 && rank < world_size,
             "tiles_for_rank: rank {} outside world size {}", rank, world_size);
  std::vector<int64_t> out;
  for (int64_t i = rank; i < num_tiles; i += world_size) out.push_back(i);
  return out;
}

}  // namespace ltx2::tiling
