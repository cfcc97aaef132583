// The distributed decode on a rank (see distributed_decode.h).
#include "parallel/distributed_decode.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "models/video_vae/tiled_decode.h"
#include "ops/rgb8.h"
#include "parallel/vae_tile_plan.h"

namespace ltx2::parallel {

namespace {

// The reference plan's tiling: frames untiled, height and width split in `tiles` (0: the
// reference's balanced_tile_split(world), multigpu.md 5.3) with `overlap` latent cells, each
// clamped so the split is legal on this grid (at most one tile per cell, overlap <= extent - tiles).
tiling::GridTiling vae_tiling(const tiling::GridExtent& grid, int world, const DecodePlanChoice& choice) {
  auto [small, large] = tiling::balanced_tile_split(world);
  if (choice.height_tiles > 0) small = choice.height_tiles;
  if (choice.width_tiles > 0) large = choice.width_tiles;
  const auto axis = [&](int64_t extent, int64_t tiles) {
    tiles = std::min(tiles, extent);
    return tiling::AxisTiling::by_count(tiles, tiles > 1 ? std::min(choice.overlap, extent - tiles) : 0);
  };
  return {tiling::AxisTiling::by_count(1, 0), axis(grid[1], small), axis(grid[2], large)};
}

}  // namespace

void DistributedDecode::decode(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                               const Tensor& timestep, const video_vae::DecodeTilePlan& local_plan,
                               const std::function<void(const Tensor&)>&) {
  LTX2_CHECK(sink_ != nullptr, "distributed decode outside a job");
  if (!choice_.reference_plan()) {
    if (world_ == 1 || local_plan.tiles.size() == 1)
      return decode_on_rank0(decoder, latent, timestep, local_plan);
    if (rank_ == 0) sink_->pipeline_plan(local_plan);
    for (int64_t i : tiling::tiles_for_rank(static_cast<int64_t>(local_plan.tiles.size()), rank_, world_))
      decode_tile(decoder, latent, timestep, i, local_plan.tiles[static_cast<size_t>(i)].in);
    return;
  }
  const tiling::GridExtent grid = {latent.size(2), latent.size(3), latent.size(4)};
  const auto f = decoder.config().scale_factors();
  const tiling::GridTiling grid_tiling = vae_tiling(grid, world_, choice_);
  const tiling::TilePlan plan = plan_vae_tiles(grid, grid_tiling, {f.time, f.height, f.width});
  if (plan.tiles.size() == 1) return decode_on_rank0(decoder, latent, timestep, local_plan);
  if (rank_ == 0) sink_->reference_plan(grid, {f.time, f.height, f.width}, grid_tiling);
  for (int64_t i : tiling::tiles_for_rank(static_cast<int64_t>(plan.tiles.size()), rank_, world_))
    decode_tile(decoder, latent, timestep, i, plan.tiles[static_cast<size_t>(i)].in);
}

void DistributedDecode::decode_diffusion(const video_vae::DiffusionVideoDecoder& decoder,
                                         const Tensor& latent, const std::vector<Tensor>& noise,
                                         const tiling::TilePlan& plan,
                                         const std::function<void(const Tensor&)>&) {
  LTX2_CHECK(sink_ != nullptr, "distributed decode outside a job");
  if (rank_ == 0 && choice_.reference_plan())
    log_info(
        "video decode: --vae-tiles does not apply to the diffusion video decoder (CausalDiffusionVAE); "
        "its tiles are the decoder's own");
  const std::array<tiling::Range, 3> content = decoder.content_box(latent.shape());
  if (world_ == 1 || plan.tiles.size() == 1)
    return stream_on_rank0({content[0].length(), content[1].length(), content[2].length()},
                           [&](const auto& on_chunk) { decoder.decode(latent, noise, plan, on_chunk); });
  if (rank_ == 0) sink_->diffusion_plan(plan, content);
  const std::vector<int64_t> mine =
      tiling::tiles_for_rank(static_cast<int64_t>(plan.tiles.size()), rank_, world_);
  if (mine.empty()) return;
  const Tensor features = decoder.stage4_input(latent);
  for (const int64_t i : mine)
    hand_over_tile(i, decoder.decode_tile(features, plan, static_cast<size_t>(i), noise));
}

uint64_t DistributedDecode::tiling_budget(uint64_t free_bytes) {
  const Tensor all =
      comm_.all_gather(Tensor::from_vector_i64({static_cast<int64_t>(free_bytes)}, {1}).to(comm_.device()));
  const std::vector<int64_t> each = all.to(Device::cpu()).to_vector_i64();
  return static_cast<uint64_t>(*std::min_element(each.begin(), each.end()));
}

// The whole video on rank 0, handed over as 8-bit frames as the decode finishes them.
void DistributedDecode::stream_on_rank0(const std::array<int64_t, 3>& video, const DecodeInChunks& decode) {
  if (rank_ != 0) return;
  sink_->whole_video(video[0], video[1], video[2]);
  int64_t done = 0;
  decode([&](const Tensor& chunk) {
    const Tensor frames = ops::decoded_to_rgb8(chunk.select(0, 0)).to(Device::cpu());
    sink_->tile_frames(0, video[0], done, frames);
    done += frames.size(0);
  });
}

void DistributedDecode::decode_on_rank0(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                                        const Tensor& timestep, const video_vae::DecodeTilePlan& local_plan) {
  const Shape& video = local_plan.video_shape;
  stream_on_rank0({video[2], video[3], video[4]}, [&](const auto& on_chunk) {
    video_vae::tiled_decode(decoder, latent, local_plan, on_chunk, timestep);
  });
}

// Decodes the latent box of the first batch item whole.
void DistributedDecode::decode_tile(const video_vae::VideoDecoder& decoder, const Tensor& latent,
                                    const Tensor& timestep, int64_t tile,
                                    const std::array<tiling::Interval, 3>& box) {
  const auto& [f, h, w] = box;
  const Tensor piece =
      latent.slice(2, f.start, f.stop).slice(3, h.start, h.stop).slice(4, w.start, w.stop).contiguous();
  hand_over_tile(tile, decoder.decode(piece, timestep));
}

// A decoded tile [1, 3, F_t, H_t, W_t] to the sink as the decoder's values, channels last, in its
// dtype.
void DistributedDecode::hand_over_tile(int64_t tile, const Tensor& decoded) {
  const Tensor values = decoded.select(0, 0).permute({1, 2, 3, 0}).contiguous().to(Device::cpu());
  sink_->tile_frames(tile, values.size(0), 0, values);
}

}  // namespace ltx2::parallel
