// The distributed video decode (multigpu.md 5), the pipelines' video-decode executor on every rank
// of a fleet (pipeline/stage_executors.h): which tiles this rank decodes, and decoding them. Where
// the decoded tiles go is its DecodedTileSink's (lib/runtime streams them to the fleet's driver,
// which blends them: runtime/decode_stream.h).
//
// By default the plan is the pipeline's own (the single-process decode's DecodeTilePlan): its
// tiles, round-robin over the ranks, each decoded as the in-process decode decodes it, so once
// blended in plan order with the same blender (tiling/tile_blender.h) the frames do not depend on
// the rank count. Asked for (--vae-tiles), the reference's plan instead (multigpu.md 5.1: height x
// width tiles by rank count or given; parallel/vae_tile_plan.h), each tile decoded whole (no
// single-GPU tiling inside a tile, as in the reference's runners). Either plan with one tile, and
// any plan on one rank, is decoded by rank 0 as the in-process engine does (the pipeline's plan,
// blended on the device), each run of finished frames leaving the device as 8-bit RGB while the
// next tiles decode. (The reference's runners decode a one-tile plan untiled: about 3x the device
// time and memory of the tiled decode at 1024x1536x121, and frames only at the end.) LTX-2.5's
// diffusion decoder is spread the same way over its own plan (decode_diffusion).
#pragma once

#include <array>
#include <cstdint>

#include "comm/communicator.h"
#include "pipeline/stage_executors.h"
#include "tiling/tile_plan.h"

namespace ltx2::parallel {

// Where a rank's decoded tiles go. Rank 0 names the plan first, once per job; then every rank
// hands over its tiles' frames in order.
class DecodedTileSink {
 public:
  virtual ~DecodedTileSink() = default;
  // The whole video from rank 0 as 8-bit RGB frames (tile 0 of frames x height x width).
  virtual void whole_video(int64_t frames, int64_t height, int64_t width) = 0;
  // The pipeline's plan, whose tiles come as the decoder's values.
  virtual void pipeline_plan(const video_vae::DecodeTilePlan& plan) = 0;
  // The diffusion decoder's plan (DiffusionVideoDecoder::tile_plan), its tiles as the decoder's
  // values; the video is the `content` box of the blend.
  virtual void diffusion_plan(const tiling::TilePlan& plan, const std::array<tiling::Range, 3>& content) = 0;
  // The reference's plan over the latent `grid` (parallel/vae_tile_plan.h), its tiles as the
  // decoder's values.
  virtual void reference_plan(const tiling::GridExtent& grid, const std::array<int64_t, 3>& scale,
                              const tiling::GridTiling& tiling) = 0;
  // Frames [first, first + n) of tile `tile`, which has `tile_frames` frames: pixels [n, H_t, W_t, 3]
  // on the CPU, 8-bit RGB for the whole video, else the decoder's values in its dtype.
  virtual void tile_frames(int64_t tile, int64_t tile_frames, int64_t first, const Tensor& pixels) = 0;
};

// Which plan the decode takes: by default the pipeline's; tile counts > 0 (both) or rank_split:
// the reference's, height x width tiles of the latent grid, those counts or the reference's
// balanced_tile_split(world) (the frames then depend on the rank count, as tiled decodes differ from
// whole ones); frames untiled; `overlap` latent cells (reference: 4); clamped per axis to what the
// grid allows.
struct DecodePlanChoice {
  int64_t height_tiles = 0, width_tiles = 0;
  bool rank_split = false;
  int64_t overlap = 4;

  bool reference_plan() const { return rank_split || height_tiles > 0 || width_tiles > 0; }
};

class DistributedDecode final : public pipeline::VideoDecodeExecutor {
 public:
  // comm: the fleet's, for the least free device memory over the ranks (tiling_budget).
  DistributedDecode(comm::Communicator& comm, DecodePlanChoice choice)
      : comm_(comm), rank_(comm.rank()), world_(comm.world_size()), choice_(choice) {}
  // Where this job's tiles go; null between jobs (a decode then fails).
  void set_sink(DecodedTileSink* sink) { sink_ = sink; }
  // The frames go to the sink: on_chunk is not called.
  void decode(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
              const video_vae::DecodeTilePlan& plan,
              const std::function<void(const Tensor& frames)>& on_chunk) override;
  // LTX-2.5's diffusion decoder over the pipeline's plan: every rank runs stages 1-3 on the whole
  // latent (the same values on each), then decodes its tiles r, r + W, ... and hands over their
  // values; a plan of one tile, or one rank, is decoded by rank 0 as the in-process engine does,
  // its frames handed over as 8-bit frames as they are final. --vae-tiles does not apply (logged).
  void decode_diffusion(const video_vae::DiffusionVideoDecoder& decoder, const Tensor& latent,
                        const std::vector<Tensor>& noise, const tiling::TilePlan& plan,
                        const std::function<void(const Tensor& frames)>& on_chunk) override;
  // The least over the ranks (a collective: every rank calls it).
  uint64_t tiling_budget(uint64_t free_bytes) override;

 private:
  // A decode that hands its runs of frames [1, 3, n, H, W] to the function it is given.
  using DecodeInChunks = std::function<void(const std::function<void(const Tensor& frames)>& on_chunk)>;
  void stream_on_rank0(const std::array<int64_t, 3>& video, const DecodeInChunks& decode);
  void hand_over_tile(int64_t tile, const Tensor& decoded);
  void decode_on_rank0(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                       const video_vae::DecodeTilePlan& local_plan);
  void decode_tile(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                   int64_t tile, const std::array<tiling::Interval, 3>& box);

  comm::Communicator& comm_;
  int rank_, world_;
  DecodePlanChoice choice_;
  DecodedTileSink* sink_ = nullptr;
};

}  // namespace ltx2::parallel
