// The fleet's distributed video decode, the pipelines' video-decode executor on every rank
// (pipeline/stage_executors.h), and the wire format of its plan.
//
// By default the plan is the pipeline's own (the single-process decode's DecodeTilePlan): its
// tiles, round-robin over the ranks, each decoded as the in-process decode decodes it, and blended
// by the driver in plan order with the same blender (tiling/tile_blender.h), so the frames do not
// depend on the rank count. Asked for (--vae-tiles), the reference's plan instead (multigpu.md
// 5.1: height x width tiles by rank count or given; parallel/vae_tile_plan.h), each tile decoded
// whole (no single-GPU tiling inside a tile, as in the reference's runners) and blended by the
// driver from the decoder's values. Either plan with one tile, and any plan on one rank, is decoded
// by rank 0 as the in-process engine does (the pipeline's plan, blended on the device), each run
// of finished frames leaving the device as 8-bit RGB while the next tiles decode. (The reference's
// runners decode a one-tile plan untiled: about 3x the device time and memory of the tiled decode
// at 1024x1536x121, and frames only at the end.)
//
// What a rank streams (fleet_engine.cpp's driver reads it): "video_plan" from rank 0, then
// "video_tile" pieces of at most tile_piece_bytes (whole frames, or bands of rows of one frame).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

#include "pipeline/stage_executors.h"
#include "runtime/rank_settings.h"
#include "runtime/runner.h"
#include "tiling/tile_plan.h"

namespace ltx2::runtime {

// The pipeline's decode plan as "video_plan" carries it (what it was made from), and back.
nlohmann::json pipeline_plan_json(const video_vae::DecodeTilePlan& plan);
video_vae::DecodeTilePlan pipeline_plan_from_json(const nlohmann::json& j);

class DistributedDecode final : public pipeline::VideoDecodeExecutor {
 public:
  // settings: its vae_* plan choice and tile_piece_bytes.
  DistributedDecode(const RunnerContext& ctx, const RankSettings& settings)
      : ctx_(ctx), settings_(settings) {}
  // Where this job's results go; null between jobs (a decode then fails).
  void set_sink(ResultSink* sink) { sink_ = sink; }
  // The frames reach the driver through the sink: on_chunk is not called.
  void decode(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
              const video_vae::DecodeTilePlan& plan,
              const std::function<void(const Tensor& frames)>& on_chunk) override;

 private:
  bool reference_plan_requested() const {
    return settings_.vae_rank_split || settings_.vae_height_tiles > 0 || settings_.vae_width_tiles > 0;
  }
  void decode_on_rank0(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                       const video_vae::DecodeTilePlan& local_plan);
  void decode_tile(const video_vae::VideoDecoder& decoder, const Tensor& latent, const Tensor& timestep,
                   int64_t tile, const std::array<tiling::Interval, 3>& box);
  void stream_frames(int64_t tile, int64_t tile_frames, int64_t first, const Tensor& pixels);

  RunnerContext ctx_;
  RankSettings settings_;
  ResultSink* sink_ = nullptr;
};

}  // namespace ltx2::runtime
