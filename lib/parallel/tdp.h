// Tiled data parallelism (multigpu.md 4.4-4.7): the tiles of the latent grid with
// their trapezoidal blend masks, which tokens a tile processes (its generated cells plus the
// conditioning tokens overlapping it, each weighted 1/number of keeping tiles), per-tile position
// normalisation, the blend back into the full token space, one rank's pre-all_reduce partial, and
// the stage executor that runs it all over a communicator.
//
// Token layout: the first F*H*W tokens are the generated grid cells in row-major (f, h, w) order;
// any further tokens are conditioning tokens.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "comm/comm_groups.h"
#include "comm/communicator.h"
#include "parallel/token_sequence.h"
#include "pipeline/stage_executors.h"
#include "tiling/tile_plan.h"

namespace ltx2::parallel {

using tiling::AxisTiling;
using tiling::GridExtent;
using tiling::GridTiling;

// What blend needs to scatter a tile's output back.
struct TileTokens {
  TokenSequence tokens;             // the tile's tokens (positions normalised if asked)
  std::vector<int64_t> keep;        // generated indices then kept conditioning indices
  int64_t num_generated = 0;        // leading entries of keep that are generated cells
  std::vector<float> cond_weights;  // per kept conditioning token
  Tensor position_offset;           // (B, 3) subtracted from positions; undefined if not normalised
  int64_t num_total_tokens = 0;
};

class TdpTilePlan {
 public:
  TdpTilePlan(const GridExtent& grid, const GridTiling& tiling);

  // The plan maps the grid onto itself (in == out) with the multi-GPU wrappers' masks.
  const std::vector<tiling::Tile>& tiles() const { return plan_.tiles; }
  int64_t num_generated_tokens() const { return grid_[0] * grid_[1] * grid_[2]; }
  std::vector<int64_t> generated_indices(size_t tile) const;
  // keep[t][c]: tile t processes conditioning token c (overlap in all three axes for some batch
  // element, or a negative time start = reference token kept everywhere).
  std::vector<std::vector<uint8_t>> cond_keep(const Tensor& positions) const;

  TileTokens tile_tokens(const TokenSequence& seq, size_t tile, bool normalize_positions) const;
  // acc (B, T_total, D) += tile output scattered by blend mask / conditioning weight.
  void blend(Tensor& acc, const Tensor& tile_out, size_t tile, const TileTokens& ctx) const;

 private:
  GridExtent grid_;
  tiling::TilePlan plan_;
};

// Runs `model` on every tile the rank owns (round-robin) and returns the rank's partial sums: the
// blended video (B, T, D) and the summed audio output divided by the global tile count, so the
// SUM all_reduce of all ranks' partials is the result. A rank without tiles contributes zeros
// (shaped like the video latent / audio_latent) instead of failing.
using TileModel = std::function<std::pair<Tensor, Tensor>(const TokenSequence& tile_video)>;
struct TdpPartial {
  Tensor video;
  Tensor audio;  // undefined when audio_latent is
};
TdpPartial tdp_rank_partial(const TdpTilePlan& plan, const TokenSequence& video, const Tensor& audio_latent,
                            int rank, int world_size, const TileModel& model,
                            bool normalize_positions = true);

// Tiled data parallel as stage 2's executor (multigpu.md 4.4): this rank's tiles of the video grid
// with the full model, blended, then one SUM all-reduce of the video and audio partials together.
// The grid is the stage's latent (frames, height, width), set for each request before it runs; a
// pass without video runs sequence parallel.
// Fewer tiles than ranks (--tdp-tiles smaller than the rank count) would leave ranks idle; when a
// cut of the ranks into G groups (comm_groups.h) has G dividing the tiles, group g runs the tiles
// rank g of G ranks would, each sequence parallel over the group's communicator, and only the
// group's first rank adds its partial to the all-reduce: the video of the same tiles on G ranks.
class TiledDataParallelExecutor final : public pipeline::TransformerExecutor {
 public:
  // `groups` may be null (tiles on single ranks only).
  TiledDataParallelExecutor(comm::Communicator& comm, comm::CommGroups* groups, const GridTiling& tiling)
      : comm_(comm), groups_(groups), tiling_(tiling) {}

  // The groups `tiles` tiles run on over `world` ranks: `world` (single ranks) unless the tiles are
  // fewer, then the largest G dividing the tiles with `has_cut(G)`, if any.
  static int groups_for(int64_t tiles, int world, const std::function<bool(int)>& has_cut);

  void set_video_grid(const GridExtent& grid) { grid_ = grid; }
  models::transformer::TransformerOutput forward(
      const models::transformer::Transformer& model, const models::transformer::Modality* video,
      const models::transformer::Modality* audio,
      const models::transformer::BatchedPerturbations& perturbations) override;

 private:
  comm::Communicator& comm_;
  comm::CommGroups* groups_;
  GridTiling tiling_;
  GridExtent grid_{};
  int said_ = 0;  // the number of groups last logged (0: none yet)
};

}  // namespace ltx2::parallel
