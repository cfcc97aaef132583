// The reference's distributed video VAE decode (multigpu.md 5.1-5.2): its tile plan (a
// tiling::TilePlan: latent tiles with a causal temporal split, their pixel boxes and blend masks),
// the dense normaliser when the masks are not a partition of unity, the guard against a second
// (single-GPU) temporal split inside a tile, and the driver's assembly of decoded tiles into frames
// (float, or 8-bit RGB written straight from the blend).
//
// Pixel tensors are [frames, height, width, channels]; the pixel grid of a latent (F, H, W) is
// ((F - 1) * time + 1, H * height, W * width).
#pragma once

#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "tiling/tile_plan.h"

namespace ltx2::parallel {

using tiling::AxisTiling;
using tiling::GridExtent;
using tiling::GridTiling;
using tiling::TilePlan;
using tiling::tiles_for_rank;

// The reference's plan (multigpu.md 5.1): the latent grid split by `tiling`, the time axis causal,
// pixel boxes scaled by the VAE's (time, height, width) factors, the multi-GPU wrappers' masks.
TilePlan plan_vae_tiles(const GridExtent& latent, const GridTiling& tiling,
                        const std::array<int64_t, 3>& scale);

// (F, H, W) float32: sum over tiles of their separable masks, clamped to >= 1e-8 (the normaliser
// of a plan whose masks are not complementary).
Tensor dense_blend_weights(const TilePlan& plan);

// Temporal chunks a single-GPU tile-size config (tile / overlap in pixel frames) would cut a
// decode of `pixel_frames` frames into.
int64_t sgpu_temporal_chunks(int64_t pixel_frames, int64_t tile_frames, int64_t overlap_frames);
// Refuses to combine a multi-GPU temporal split with a single-GPU one that would cut any tile
// again (two causal splits conflict). Checked over all tiles, so every rank decides alike.
void check_single_temporal_split(const TilePlan& plan, const AxisTiling& frames,
                                 const std::function<int64_t(int64_t pixel_frames)>& sgpu_chunks);

// Frame ranges [start, stop) of the driver's temporal output batches: ceil(F / n) frames each,
// the last shorter; empty batches are dropped.
std::vector<std::pair<int64_t, int64_t>> temporal_batches(int64_t pixel_frames, int64_t num_batches);
// Tile indices in assembly order: by rank, then each rank's own order (deterministic sums).
std::vector<int64_t> assembly_order(int64_t num_tiles, int world_size);

struct DecodedTile {
  int64_t tile = 0;  // global tile index into plan.tiles
  Tensor pixels;     // [F_t, H_t, W_t, C] of that tile's pixel box: CPU, f32 or bf16
};

// What a decoded tile's values are before they are blended.
enum class TileValues {
  Unit,     // pixels in [0, 1], blended as they are
  Decoded,  // the decoder's [-1, 1] output: each value goes through ops::from_vae_range first (mapped
            // and clamped per tile, as the reference's tiles are before it blends them)
};

// Frames [frame_start, frame_stop) of the video, [frames, H, W, C] float32 on the CPU: per pixel,
// the sum over `tiles` in their order of value * ((m_f * m_h) * m_w) from 0, divided by
// dense_weights when defined, in float32. (frame, row) pairs run in parallel; each pixel's sum
// has a fixed order, so the result does not depend on the thread count.
Tensor assemble_frames(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                       int64_t frame_stop, const Tensor& dense_weights, TileValues values = TileValues::Unit);
// The same blend written as 8-bit RGB (ops::unit_to_u8 of every blended value), uint8 [frames, H,
// W, C] on the CPU, with no float frame in between.
Tensor assemble_frames_rgb8(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t frame_start,
                            int64_t frame_stop, const Tensor& dense_weights, TileValues values);

}  // namespace ltx2::parallel
