// The reference's decode-side computations that ltx2 does not share (see vae_rank_sim.h).
#include "golden/sims/vae_rank_sim.h"

#include <algorithm>

#include "core/error.h"

namespace ltx2::golden {

Tensor dense_blend_weights(const tiling::TilePlan& plan) {
  const tiling::GridExtent& e = plan.out_extent;
  std::vector<float> w(static_cast<size_t>(e[0] * e[1] * e[2]), 0.f);
  for (const tiling::Tile& t : plan.tiles)
    for (int64_t f = 0; f < t.out[0].length(); ++f)
      for (int64_t h = 0; h < t.out[1].length(); ++h)
        for (int64_t x = 0; x < t.out[2].length(); ++x) {
          const int64_t at = ((t.out[0].start + f) * e[1] + t.out[1].start + h) * e[2] + t.out[2].start + x;
          w[at] += t.masks[0][f] * t.masks[1][h] * t.masks[2][x];
        }
  for (float& v : w) v = std::max(v, 1e-8f);
  return Tensor::from_vector(w, {e[0], e[1], e[2]});
}

int64_t sgpu_temporal_chunks(int64_t pixel_frames, int64_t tile_frames, int64_t overlap_frames) {
  LTX2_CHECK(tile_frames > overlap_frames, "temporal tile of {} frames must exceed its overlap {}",
             tile_frames, overlap_frames);
  const int64_t stride = tile_frames - overlap_frames;
  return std::max<int64_t>(1, (pixel_frames - 1 + stride - 1) / stride);
}

void check_single_temporal_split(const tiling::TilePlan& plan, const tiling::AxisTiling& frames,
                                 const std::function<int64_t(int64_t pixel_frames)>& sgpu_chunks) {
  const int64_t frame_tiles = frames.by == tiling::AxisTiling::By::Count ? frames.value : 1;
  if (frame_tiles <= 1 || !sgpu_chunks) return;
  for (const tiling::Tile& t : plan.tiles) {
    const int64_t pixel_frames = t.out[0].length();
    const int64_t chunks = sgpu_chunks(pixel_frames);
    LTX2_CHECK(
        chunks <= 1,
        "VAE decode: multi-GPU temporal tiling ({} frame tiles) cannot be combined with single-GPU temporal "
        "tiling that would split a tile again ({} frames -> {} chunks); use only one",
        frame_tiles, pixel_frames, chunks);
  }
}

std::vector<std::pair<int64_t, int64_t>> temporal_batches(int64_t pixel_frames, int64_t num_batches) {
  LTX2_CHECK(num_batches >= 1, "temporal_batches: need at least one batch, got {}", num_batches);
  const int64_t size = (pixel_frames + num_batches - 1) / num_batches;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t k = 0; k < num_batches; ++k) {
    const int64_t start = k * size, stop = std::min((k + 1) * size, pixel_frames);
    if (start < stop) out.emplace_back(start, stop);
  }
  return out;
}

}  // namespace ltx2::golden
