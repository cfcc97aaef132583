// The one blender of tiled outputs on a grid: the single-process tiled decode, the fleet driver's
// assembly of the pipeline's plan and of the reference's plan all add their decoded tiles here.
// Each output cell is the sum of value x ((m_f x m_h) x m_w) over the tiles in the order they were
// added, divided by the summed weights (clamped to 1e-8) only when the plan's masks are not
// complementary. (Tiled data parallelism blends in token space instead: parallel/tdp.h.)
#pragma once

#include <array>
#include <vector>

#include "core/tensor.h"
#include "tiling/tile_plan.h"

namespace ltx2::tiling {

// Tiles are [B, C, f, h, w] (their out boxes). Tiles of one temporal group may arrive in any order;
// groups must arrive in order. add() returns the chunks of finished frames [B, C, n, H, W] (in time
// order, possibly none); their concatenation over dim 2 is the whole output once every tile was
// added. The blend buffers and the chunks are float32 on `device` (where the tiles are made); the
// masks are uploaded once, here, so adding a tile copies nothing between host and device.
class TileBlender {
 public:
  // batch, channels: B and C of every tile.
  TileBlender(const TilePlan& plan, int64_t batch, int64_t channels, Device device = Device::cpu());
  std::vector<Tensor> add(size_t tile_index, const Tensor& tile);
  bool done() const { return group_ == plan_.temporal_groups; }

 private:
  struct Buffer {
    Tensor out, weight;  // [B, C, n, H, W] and [1, 1, n, H, W] (weight only when normalising)
    int64_t start = 0, end = 0;
  };
  Buffer make_buffer(size_t group) const;
  // The blend of a float32 tile on the host as the tensor ops form it, value * ((m_f * m_h) * m_w)
  // added to the buffer (and the mask to the weights), each in float32 in that order, so the sums
  // are the same bits; rows in parallel. The tensor ops' broadcasts ran 3.5 frames/s at full size.
  void add_on_host(const Tile& tile, const Tensor& values);
  Tensor release(const Buffer& b, int64_t frames) const;

  TilePlan plan_;
  int64_t batch_, channels_;
  Device device_;
  std::vector<std::array<Tensor, 3>> masks_;  // per tile and axis: [1, 1, f|1, h|1, w|1] f32 on device_
  Tensor min_weight_;                         // 0-d on device_
  std::vector<size_t> remaining_;             // tiles still missing per group
  std::vector<bool> received_;
  size_t group_ = 0;
  Buffer current_;
};

}  // namespace ltx2::tiling
