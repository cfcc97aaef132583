// How the distributed decode's tiles (parallel/distributed_decode.h) travel from a rank to the
// fleet's driver: the plan, and the tiles in pieces, as results of the rank's job.
//
// What a rank streams (fleet_engine.cpp's driver reads it): "video_plan" from rank 0 ("frames":
// the whole video as 8-bit frames; "tiles": the pipeline's plan, as pipeline_plan_json writes it;
// "diffusion_tiles": the diffusion decoder's plan itself, as tile_plan_json writes it, and the
// content box; "grid": the reference's plan), then "video_tile" pieces of at most tile_piece_bytes (whole
// frames, or bands of rows of one frame when a frame is larger), so no frame size is too large for
// the result rings.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "parallel/distributed_decode.h"
#include "runtime/runner.h"

namespace ltx2::runtime {

// The pipeline's decode plan as "video_plan" carries it (what it was made from), and back.
nlohmann::json pipeline_plan_json(const video_vae::DecodeTilePlan& plan);
video_vae::DecodeTilePlan pipeline_plan_from_json(const nlohmann::json& j);
// A tile plan itself (extents, every tile's boxes and masks), and back.
nlohmann::json tile_plan_json(const tiling::TilePlan& plan);
tiling::TilePlan tile_plan_from_json(const nlohmann::json& j);

class DecodeStream final : public parallel::DecodedTileSink {
 public:
  // tile_piece_bytes: the most bytes of one piece (at least one row goes).
  DecodeStream(ResultSink& out, size_t tile_piece_bytes) : out_(out), piece_bytes_(tile_piece_bytes) {}
  void whole_video(int64_t frames, int64_t height, int64_t width) override;
  void pipeline_plan(const video_vae::DecodeTilePlan& plan) override;
  void diffusion_plan(const tiling::TilePlan& plan, const std::array<tiling::Range, 3>& content) override;
  void reference_plan(const tiling::GridExtent& grid, const std::array<int64_t, 3>& scale,
                      const tiling::GridTiling& tiling) override;
  void tile_frames(int64_t tile, int64_t tile_frames, int64_t first, const Tensor& pixels) override;

 private:
  ResultSink& out_;
  size_t piece_bytes_;
};

}  // namespace ltx2::runtime
