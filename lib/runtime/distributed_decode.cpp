// The distributed decode on a rank, and its plan's wire format (see distributed_decode.h).
#include "runtime/distributed_decode.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/rgb8.h"
#include "parallel/vae_tile_plan.h"

namespace ltx2::runtime {

using nlohmann::json;

namespace {

// The distributed decode tiling: frames untiled, height and width split in `tiles` (0: the
// reference's balanced_tile_split(world), multigpu.md 5.3) with `overlap` latent cells, each
// clamped so the split is legal on this grid (at most one tile per cell, overlap <= extent - tiles).
tiling::GridTiling vae_tiling(const tiling::GridExtent& grid, int world, std::array<int64_t, 2> tiles,
                              int64_t overlap) {
  auto [small, large] = tiling::balanced_tile_split(world);
  if (tiles[0] > 0) small = tiles[0];
  if (tiles[1] > 0) large = tiles[1];
  const auto axis = [&](int64_t extent, int64_t tiles) {
    tiles = std::min(tiles, extent);
    return tiling::AxisTiling::by_count(tiles, tiles > 1 ? std::min(overlap, extent - tiles) : 0);
  };
  return {tiling::AxisTiling::by_count(1, 0), axis(grid[1], small), axis(grid[2], large)};
}

}  // namespace

nlohmann::json pipeline_plan_json(const video_vae::DecodeTilePlan& plan) {
  json config = json::array();
  for (const tiling::AxisTiling& a : {plan.config.frames, plan.config.height, plan.config.width})
    config.push_back({a.value, a.overlap});
  return {{"plan", "tiles"},
          {"latent_shape", plan.latent_shape},
          {"out_channels", plan.video_shape[1]},
          {"config", config},
          {"factors", {plan.factors.time, plan.factors.height, plan.factors.width}}};
}

video_vae::DecodeTilePlan pipeline_plan_from_json(const nlohmann::json& j) {
  const auto axis = [&](size_t i) {
    return tiling::AxisTiling::by_size(j.at("config").at(i).at(0), j.at("config").at(i).at(1));
  };
  const json& f = j.at("factors");
  return video_vae::plan_tiled_decode(j.at("latent_shape").get<Shape>(), j.at("out_channels"),
                                      {axis(0), axis(1), axis(2)}, {f.at(0), f.at(1), f.at(2)});
}

void DistributedDecode::decode(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                               const Tensor& timestep, const video_vae::DecodeTilePlan& local_plan,
                               const std::function<void(const Tensor&)>&) {
  LTX2_CHECK(sink_ != nullptr, "fleet decode outside a job");
  if (!reference_plan_requested()) {
    if (ctx_.world_size == 1 || local_plan.tiles.size() == 1)
      return decode_on_rank0(decoder, latent, timestep, local_plan);
    if (ctx_.rank == 0) sink_->output("video_plan", pipeline_plan_json(local_plan));
    for (int64_t i :
         tiling::tiles_for_rank(static_cast<int64_t>(local_plan.tiles.size()), ctx_.rank, ctx_.world_size)) {
      decode_tile(decoder, latent, timestep, i, local_plan.tiles[static_cast<size_t>(i)].in);
    }
    return;
  }
  const tiling::GridExtent grid = {latent.size(2), latent.size(3), latent.size(4)};
  const auto f = decoder.config().scale_factors();
  const tiling::GridTiling grid_tiling = vae_tiling(
      grid, ctx_.world_size, {settings_.vae_height_tiles, settings_.vae_width_tiles}, settings_.vae_overlap);
  const tiling::TilePlan plan = parallel::plan_vae_tiles(grid, grid_tiling, {f.time, f.height, f.width});
  if (plan.tiles.size() == 1) return decode_on_rank0(decoder, latent, timestep, local_plan);
  if (ctx_.rank == 0) {
    json axes = json::array();
    for (const tiling::AxisTiling& a : grid_tiling) axes.push_back({a.value, a.overlap});
    sink_->output(
        "video_plan",
        {{"plan", "grid"}, {"grid", grid}, {"scale", {f.time, f.height, f.width}}, {"tiling", axes}});
  }
  for (int64_t i :
       tiling::tiles_for_rank(static_cast<int64_t>(plan.tiles.size()), ctx_.rank, ctx_.world_size)) {
    decode_tile(decoder, latent, timestep, i, plan.tiles[static_cast<size_t>(i)].in);
  }
}

// The whole video on rank 0, streamed as 8-bit frames as the tiled decode finishes them.
void DistributedDecode::decode_on_rank0(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                                        const Tensor& timestep, const video_vae::DecodeTilePlan& local_plan) {
  if (ctx_.rank != 0) return;
  const Shape& video = local_plan.video_shape;
  sink_->output("video_plan",
                {{"plan", "frames"}, {"frames", video[2]}, {"height", video[3]}, {"width", video[4]}});
  int64_t done = 0;
  video_vae::tiled_decode(
      decoder, latent, local_plan,
      [&](const Tensor& chunk) {
        const Tensor frames = ops::decoded_to_rgb8(chunk.select(0, 0)).to(Device::cpu());
        stream_frames(0, video[2], done, frames);
        done += frames.size(0);
      },
      timestep);
}

// Decodes the latent box of the first batch item whole and streams the decoder's values,
// channels last, in its dtype.
void DistributedDecode::decode_tile(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                                    const Tensor& timestep, int64_t tile,
                                    const std::array<tiling::Interval, 3>& box) {
  const auto& [f, h, w] = box;
  const Tensor piece =
      latent.slice(2, f.start, f.stop).slice(3, h.start, h.stop).slice(4, w.start, w.stop).contiguous();
  const Tensor decoded = decoder.decode(piece, timestep).select(0, 0);  // [3, F_t, H_t, W_t]
  const Tensor values = decoded.permute({1, 2, 3, 0}).contiguous().to(Device::cpu());
  stream_frames(tile, values.size(0), 0, values);
}

// Streams frames [first, first + n) of a decoded tile of tile_frames frames (pixels [n, H_t, W_t,
// 3]) in pieces of at most settings_.tile_piece_bytes: whole frames, else bands of at least one row of
// one frame.
void DistributedDecode::stream_frames(int64_t tile, int64_t tile_frames, int64_t first,
                                      const Tensor& pixels) {
  const int64_t frames = pixels.size(0), rows = pixels.size(1);
  if (frames == 0) return;
  const size_t row_bytes = pixels.nbytes() / static_cast<size_t>(frames * rows);
  const size_t frame_bytes = row_bytes * static_cast<size_t>(rows);
  const auto send = [&](int64_t frame, int64_t row, const Tensor& part) {
    sink_->output(
        "video_tile",
        {{"tile", tile}, {"frames", tile_frames}, {"frame_start", first + frame}, {"row_start", row}},
        {{"pixels", part}});
  };
  if (frame_bytes <= settings_.tile_piece_bytes) {
    const auto step = static_cast<int64_t>(settings_.tile_piece_bytes / frame_bytes);
    for (int64_t start = 0; start < frames; start += step)
      send(start, 0, pixels.narrow(0, start, std::min(step, frames - start)));
    return;
  }
  const auto band = std::max<int64_t>(1, static_cast<int64_t>(settings_.tile_piece_bytes / row_bytes));
  for (int64_t frame = 0; frame < frames; ++frame)
    for (int64_t row = 0; row < rows; row += band)
      send(frame, row, pixels.narrow(0, frame, 1).narrow(1, row, std::min(band, rows - row)));
}

}  // namespace ltx2::runtime
