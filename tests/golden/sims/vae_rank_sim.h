// The reference's distributed decode where ltx2 does otherwise, simulated to replay its fixtures
// (vae_rank_sim, vae_tiles): the dense weight normaliser it precomputes (the blender of ltx2 sums
// the weights as it adds the tiles), the temporal output batches of its driver (ltx2 hands frames
// out as soon as they are final), and its guard against a single-GPU temporal split inside a
// multi-GPU temporal tile (ltx2's distributed decode never splits frames: it cannot arise).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "tiling/tile_plan.h"

namespace ltx2::golden {

// (F, H, W) float32: sum over tiles in plan order of their separable masks, clamped to >= 1e-8.
Tensor dense_blend_weights(const tiling::TilePlan& plan);

// Temporal chunks a single-GPU tile-size config (tile / overlap in pixel frames) would cut a
// decode of `pixel_frames` frames into.
int64_t sgpu_temporal_chunks(int64_t pixel_frames, int64_t tile_frames, int64_t overlap_frames);
// Refuses to combine a multi-GPU temporal split with a single-GPU one that would cut any tile
// again (two causal splits conflict). Checked over all tiles, so every rank decides alike (the
// reference refused on the affected ranks only, and hung).
void check_single_temporal_split(const tiling::TilePlan& plan, const tiling::AxisTiling& frames,
                                 const std::function<int64_t(int64_t pixel_frames)>& sgpu_chunks);

// Frame ranges [start, stop) of the driver's temporal output batches: ceil(F / n) frames each,
// the last shorter; empty batches are dropped.
std::vector<std::pair<int64_t, int64_t>> temporal_batches(int64_t pixel_frames, int64_t num_batches);

}  // namespace ltx2::golden
