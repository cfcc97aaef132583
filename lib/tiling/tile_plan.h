// The one tile plan of the engine: the single-process tiled decode (video_vae::DecodeTilePlan adds
// what it was made from), the reference's distributed decode plan (parallel/vae_tile_plan.h) and
// tiled data parallelism (parallel/tdp.h) all cut a grid of input cells (frames, height, width) per
// axis (axis_split.h) and give each tile its input box, the output box it produces and its
// per-axis blend masks (mask.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tiling/axis_split.h"
#include "tiling/mask.h"

namespace ltx2::tiling {

using GridExtent = std::array<int64_t, 3>;  // frames, height, width
using GridTiling = std::array<AxisTiling, 3>;

struct Range {
  int64_t start = 0, stop = 0;  // [start, stop)
  int64_t length() const { return stop - start; }
};

// How a tile's input cells map to output cells, per axis scaled by `scale` (time, height, width):
// out = [k start, k stop) with ramps k times longer. causal_time (the video VAE, whose first latent
// frame decodes to one pixel frame): the time axis is split causally (axis_split.h) and maps to
// [t start, 1 + t (stop - 1)) with a left ramp of 0 or 1 + t (left - 1), starting from zero, and a
// right ramp of t right. Scale 1 without causal_time maps a grid onto itself (tiled data parallel).
struct GridMapping {
  std::array<int64_t, 3> scale{1, 1, 1};
  bool causal_time = false;
  RampValues ramps = RampValues::Fractions;
};

struct Tile {
  std::array<Interval, 3> in;               // input cells per axis, with the split's ramps
  std::array<Range, 3> out;                 // output cells per axis
  std::array<std::vector<float>, 3> masks;  // per axis, out[a].length() blend weights
  size_t temporal_group = 0;                // index of its time interval
};

struct TilePlan {
  GridExtent in_extent{}, out_extent{};
  std::vector<Tile> tiles;  // frames slowest, then height, then width
  size_t temporal_groups = 0;
  // Per axis, the masks of the distinct intervals sum to 1 (within 1e-5) at every output cell, so a
  // blend needs no weight normalisation; false when ramps inside one tile overlap.
  bool masks_complementary = true;
};

TilePlan plan_tiles(const GridExtent& in, const GridTiling& tiling, const GridMapping& mapping);

// Global tile indices processed by `rank`: rank, rank + W, rank + 2W, ... (empty when there are
// fewer tiles than ranks).
std::vector<int64_t> tiles_for_rank(int64_t num_tiles, int rank, int world_size);

}  // namespace ltx2::tiling
