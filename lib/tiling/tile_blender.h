// The one blender of tiled outputs on a grid: the single-process tiled decode, the fleet driver's
// assembly of the pipeline's plan and of the reference's plan all add their decoded tiles here.
// Each output cell is the sum of value x ((m_f x m_h) x m_w) over the tiles in the order they added
// it, divided by the summed weights (clamped to 1e-8) only when the plan's masks are not
// complementary. (Tiled data parallelism blends in token space instead: parallel/tdp.h.)
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "tiling/tile_plan.h"

namespace ltx2::tiling {

// Tiles are [B, C, f, h, w] (their out boxes); a tile may come whole or a run of frames at a time,
// its frames in order. Each frame is summed in the order the tiles add it, which the caller chooses
// (the plan's order, the reference's assembly order), and is released as soon as every tile over it
// has added it: add() returns the frames it made final, one chunk [B, C, 1, H, W] each (in time
// order, possibly none; not joined, so a caller that wants them apart copies nothing); their
// concatenation over dim 2 is the whole output once every
// tile was added. A frame's sums live only from its first tile to its release, so the blender holds
// the frames in flight, never the whole video. Sums and chunks are float32 on `device` (where the
// tiles are made); the masks are uploaded once, here, so adding a tile copies nothing between host
// and device.
class TileBlender {
 public:
  // batch, channels: B and C of every tile.
  TileBlender(const TilePlan& plan, int64_t batch, int64_t channels, Device device = Device::cpu());
  // Frames [first, first + n) of tile `tile_index`, values [B, C, n, h, w]; `first` is how many of
  // its frames the tile has added so far.
  std::vector<Tensor> add(size_t tile_index, const Tensor& values, int64_t first = 0);
  // How many of the tile's frames were added.
  int64_t frames_added(size_t tile_index) const { return added_.at(tile_index); }
  bool done() const { return released_ == static_cast<int64_t>(missing_.size()); }

 private:
  struct FrameSums {
    Tensor out, weight;  // [B, C, 1, H, W] and [1, 1, 1, H, W] (weight only when normalising)
  };
  FrameSums& sums(int64_t frame);
  // The blend of the tile's frame `f` on the host as the tensor ops form it, value * ((m_f * m_h) *
  // m_w) added to the sums (and the mask to the weights), each in float32 in that order, so the sums
  // are the same bits; rows in parallel. `values` points at that frame in a float32 run of
  // `run_frames` frames [B, C, run_frames, h, w]. The tensor ops' broadcasts ran 3.5 frames/s at
  // full size.
  void add_on_host(const Tile& tile, int64_t f, int64_t run_frames, const float* values, FrameSums& to);

  TilePlan plan_;
  int64_t batch_, channels_;
  Device device_;
  std::vector<std::array<Tensor, 3>> masks_;  // per tile and axis: [1, 1, f|1, h|1, w|1] f32 on device_
  Tensor min_weight_;                         // 0-d on device_
  std::vector<int64_t> added_;                // frames added per tile
  std::vector<int> missing_;                  // per output frame: the tiles over it yet to add it
  std::vector<FrameSums> frames_;             // per output frame, while in flight
  int64_t released_ = 0;                      // frames before it were handed out
};

}  // namespace ltx2::tiling
