// Cartesian tile products and round-robin tile assignment.
#include "parallel/tile_plan.h"

#include "core/error.h"

namespace ltx2::parallel {

std::vector<TileBox> tile_boxes(const GridExtent& extent, const GridTiling& tiling, bool causal_frames) {
  const auto frames = split_axis(extent[0], tiling[0], causal_frames);
  const auto height = split_axis(extent[1], tiling[1], false);
  const auto width = split_axis(extent[2], tiling[2], false);
  std::vector<TileBox> out;
  for (const auto& f : frames)
    for (const auto& h : height)
      for (const auto& w : width) out.push_back({f, h, w});
  return out;
}

std::vector<float> outer_product_mask(const std::array<std::vector<float>, 3>& masks) {
  std::vector<float> out;
  out.reserve(masks[0].size() * masks[1].size() * masks[2].size());
  for (float f : masks[0])
    for (float h : masks[1])
      for (float w : masks[2]) out.push_back(f * h * w);
  return out;
}

std::vector<int64_t> tiles_for_rank(int64_t num_tiles, int rank, int world_size) {
  LTX2_CHECK(world_size >= 1 && rank >= 0 && rank < world_size,
             "tiles_for_rank: rank {} outside world size {}", rank, world_size);
  std::vector<int64_t> out;
  for (int64_t i = rank; i < num_tiles; i += world_size) out.push_back(i);
  return out;
}

}  // namespace ltx2::parallel
