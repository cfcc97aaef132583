// 3-D tile layouts over a (frames, height, width) grid: the Cartesian product of per-axis splits,
// frames outermost and width fastest, and the round-robin assignment of tiles to ranks.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "parallel/tile_split.h"

namespace ltx2::parallel {

using TileBox = std::array<AxisInterval, 3>;  // frames, height, width
using GridExtent = std::array<int64_t, 3>;
using GridTiling = std::array<AxisTiling, 3>;

// Tiles of `extent` split per `tiling`; the frames axis uses the causal split when asked.
std::vector<TileBox> tile_boxes(const GridExtent& extent, const GridTiling& tiling, bool causal_frames);

// Row-major outer product m_f[i] * m_h[j] * m_w[k].
std::vector<float> outer_product_mask(const std::array<std::vector<float>, 3>& masks);

// Global tile indices processed by `rank`: i = rank, rank + W, rank + 2W, ... (may be empty when
// there are fewer tiles than ranks).
std::vector<int64_t> tiles_for_rank(int64_t num_tiles, int rank, int world_size);

}  // namespace ltx2::parallel
