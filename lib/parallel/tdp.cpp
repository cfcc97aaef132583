// Token selection, conditioning weights and blending for tiled data parallelism.
#include "parallel/tdp.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/log.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "parallel/sequence_parallel.h"

namespace ltx2::parallel {

TdpTilePlan::TdpTilePlan(const GridExtent& grid, const GridTiling& tiling)
    : grid_(grid), plan_(tiling::plan_tiles(grid, tiling, {})) {}

std::vector<int64_t> TdpTilePlan::generated_indices(size_t tile) const {
  const std::array<tiling::Interval, 3>& b = plan_.tiles.at(tile).in;
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(b[0].length() * b[1].length() * b[2].length()));
  for (int64_t f = b[0].start; f < b[0].stop; ++f)
    for (int64_t h = b[1].start; h < b[1].stop; ++h)
      for (int64_t w = b[2].start; w < b[2].stop; ++w) idx.push_back((f * grid_[1] + h) * grid_[2] + w);
  return idx;
}

std::vector<std::vector<uint8_t>> TdpTilePlan::cond_keep(const Tensor& positions) const {
  LTX2_CHECK(positions.dim() == 4 && positions.size(1) == 3 && positions.size(3) == 2,
             "tdp: positions must be (B, 3, T, 2), got {}", shape_str(positions.shape()));
  const int64_t batch = positions.size(0), total = positions.size(2), n_gen = num_generated_tokens();
  LTX2_CHECK(total >= n_gen, "tdp: {} tokens but the {}x{}x{} grid has {} generated cells", total, grid_[0],
             grid_[1], grid_[2], n_gen);
  const std::vector<float> pos = positions.to_vector();
  auto at = [&](int64_t b, int64_t axis, int64_t t, int64_t bound) {
    return pos[static_cast<size_t>(((b * 3 + axis) * total + t) * 2 + bound)];
  };
  const int64_t n_cond = total - n_gen;
  std::vector<std::vector<uint8_t>> keep(plan_.tiles.size(),
                                         std::vector<uint8_t>(static_cast<size_t>(n_cond), 0));
  for (size_t ti = 0; ti < plan_.tiles.size(); ++ti) {
    const std::vector<int64_t> gen = generated_indices(ti);
    for (int64_t b = 0; b < batch; ++b) {
      float start[3], end[3];
      for (int a = 0; a < 3; ++a) {
        start[a] = std::numeric_limits<float>::infinity();
        end[a] = -std::numeric_limits<float>::infinity();
        for (int64_t t : gen) {
          start[a] = std::min(start[a], at(b, a, t, 0));
          end[a] = std::max(end[a], at(b, a, t, 1));
        }
      }
      for (int64_t c = 0; c < n_cond; ++c) {
        const int64_t t = n_gen + c;
        bool overlaps = true;
        for (int a = 0; a < 3; ++a)
          overlaps = overlaps && at(b, a, t, 0) < end[a] && at(b, a, t, 1) > start[a];
        if (overlaps || at(b, 0, t, 0) < 0) keep[ti][c] = 1;
      }
    }
  }
  return keep;
}

TileTokens TdpTilePlan::tile_tokens(const TokenSequence& seq, size_t tile, bool normalize_positions) const {
  LTX2_CHECK(tile < plan_.tiles.size(), "tdp: tile {} outside the plan's {} tiles", tile, plan_.tiles.size());
  TileTokens out;
  out.num_total_tokens = seq.num_tokens();
  out.keep = generated_indices(tile);
  out.num_generated = static_cast<int64_t>(out.keep.size());
  const int64_t n_gen = num_generated_tokens();
  LTX2_CHECK(out.num_total_tokens >= n_gen, "tdp: {} tokens but the grid has {} generated cells",
             out.num_total_tokens, n_gen);
  if (out.num_total_tokens > n_gen) {
    const auto keep = cond_keep(seq.positions);
    for (size_t c = 0; c < keep[tile].size(); ++c) {
      if (!keep[tile][c]) continue;
      int64_t keepers = 0;
      for (const auto& row : keep) keepers += row[c];
      out.keep.push_back(n_gen + static_cast<int64_t>(c));
      out.cond_weights.push_back(1.f / static_cast<float>(keepers));
    }
  }
  TokenSequence& t = out.tokens;
  t.latent = take_indices(seq.latent, 1, out.keep);
  if (seq.timesteps.defined()) t.timesteps = take_indices(seq.timesteps, 1, out.keep);
  if (seq.keyframes_mask.defined()) t.keyframes_mask = take_indices(seq.keyframes_mask, 1, out.keep);
  if (seq.attention_mask.defined())
    t.attention_mask = take_indices(take_indices(seq.attention_mask, 1, out.keep), 2, out.keep);
  t.positions = take_indices(seq.positions, 2, out.keep);
  if (normalize_positions) {
    // Offset = the tile's smallest generated start coordinate per axis (min = -max(-x)).
    Tensor starts = t.positions.narrow(2, 0, out.num_generated).select(3, 0);
    out.position_offset = ops::mul(ops::amax(ops::mul(starts, -1.f), 2), -1.f);
    t.positions = ops::sub(t.positions, out.position_offset.unsqueeze(2).unsqueeze(3));
  }
  return out;
}

void TdpTilePlan::blend(Tensor& acc, const Tensor& tile_out, size_t tile, const TileTokens& ctx) const {
  LTX2_CHECK(acc.dim() == 3 && acc.size(0) == tile_out.size(0) && acc.size(1) == ctx.num_total_tokens &&
                 acc.size(2) == tile_out.size(2),
             "tdp blend: accumulator {} does not match (B, {}, D) of tile output {}", shape_str(acc.shape()),
             ctx.num_total_tokens, shape_str(tile_out.shape()));
  LTX2_CHECK(tile_out.size(1) == static_cast<int64_t>(ctx.keep.size()),
             "tdp blend: tile output has {} tokens, tile kept {}", tile_out.size(1), ctx.keep.size());
  const std::vector<float> mask = tiling::outer_product_mask(plan_.tiles.at(tile).masks);
  Tensor weights = Tensor::from_vector(mask, {1, static_cast<int64_t>(mask.size()), 1})
                       .to(tile_out.device())
                       .to(tile_out.dtype());
  std::vector<int64_t> gen(ctx.keep.begin(), ctx.keep.begin() + ctx.num_generated);
  add_at_indices(acc, 1, gen, ops::mul(tile_out.narrow(1, 0, ctx.num_generated), weights));
  if (!ctx.cond_weights.empty()) {
    const auto n_cond = static_cast<int64_t>(ctx.cond_weights.size());
    Tensor cw =
        Tensor::from_vector(ctx.cond_weights, {1, n_cond, 1}).to(tile_out.device()).to(tile_out.dtype());
    std::vector<int64_t> cond(ctx.keep.begin() + ctx.num_generated, ctx.keep.end());
    add_at_indices(acc, 1, cond, ops::mul(tile_out.narrow(1, ctx.num_generated, n_cond), cw));
  }
}

TdpPartial tdp_rank_partial(const TdpTilePlan& plan, const TokenSequence& video, const Tensor& audio_latent,
                            int rank, int world_size, const TileModel& model, bool normalize_positions) {
  const auto num_tiles = static_cast<int64_t>(plan.tiles().size());
  TdpPartial out;
  out.video = Tensor::zeros(video.latent.shape(), video.latent.dtype(), video.latent.device());
  if (audio_latent.defined())
    out.audio = Tensor::zeros(audio_latent.shape(), audio_latent.dtype(), audio_latent.device());
  for (int64_t tile : tiling::tiles_for_rank(num_tiles, rank, world_size)) {
    TileTokens ctx = plan.tile_tokens(video, static_cast<size_t>(tile), normalize_positions);
    auto [tile_video, tile_audio] = model(ctx.tokens);
    plan.blend(out.video, tile_video, static_cast<size_t>(tile), ctx);
    if (out.audio.defined()) out.audio = ops::add(out.audio, tile_audio);
  }
  if (out.audio.defined()) out.audio = ops::mul(out.audio, 1.f / static_cast<float>(num_tiles));
  return out;
}

int TiledDataParallelExecutor::groups_for(int64_t tiles, int world, const std::function<bool(int)>& has_cut) {
  if (tiles >= world) return world;
  for (int groups = static_cast<int>(tiles); groups > 1; --groups)
    if (tiles % groups == 0 && world % groups == 0 && has_cut(groups)) return groups;
  return world;
}

models::transformer::TransformerOutput TiledDataParallelExecutor::forward(
    const models::transformer::Transformer& model, const models::transformer::Modality* video,
    const models::transformer::Modality* audio,
    const models::transformer::BatchedPerturbations& perturbations) {
  namespace tr = models::transformer;
  if (video == nullptr) return SequenceParallelExecutor(comm_).forward(model, video, audio, perturbations);
  const TdpTilePlan plan(grid_, tiling_);
  const int W = comm_.world_size();
  const auto tiles = static_cast<int64_t>(plan.tiles().size());
  const int G = groups_for(tiles, W, [this](int g) { return comm::has_cut(groups_, g); });
  const int S = W / G;
  comm::Communicator* group = comm::group_communicator(groups_, G, W, comm_.rank(), "tiled data parallel");
  if (said_ != G && comm_.rank() == 0) {
    said_ = G;
    if (S > 1)
      log_info("stage 2: {} tiles over {} groups of {} ranks, each tile sequence parallel within its group",
               tiles, G, S);
  }
  const auto tile_model = [&](const TokenSequence& tile) {
    const tr::Modality v = with_token_fields(*video, tile);
    tr::TransformerOutput o = group
                                  ? SequenceParallelExecutor(*group).forward(model, &v, audio, perturbations)
                                  : model.forward(&v, audio, perturbations);
    return std::pair<Tensor, Tensor>(o.video, o.audio);
  };
  const Tensor audio_latent = audio != nullptr ? audio->latent : Tensor();
  TdpPartial partial =
      tdp_rank_partial(plan, token_fields(*video), audio_latent, comm_.rank() / S, G, tile_model);
  if (comm_.rank() % S != 0) {  // the group's first rank holds the same partial and adds it
    partial.video = Tensor::zeros(partial.video.shape(), partial.video.dtype(), partial.video.device());
    if (partial.audio.defined())
      partial.audio = Tensor::zeros(partial.audio.shape(), partial.audio.dtype(), partial.audio.device());
  }
  const int64_t nv = partial.video.numel();
  std::vector<Tensor> parts = {partial.video.contiguous().view({nv})};
  if (partial.audio.defined()) parts.push_back(partial.audio.contiguous().view({partial.audio.numel()}));
  const Tensor sum = comm_.all_reduce_sum(parts.size() == 1 ? parts[0] : ops::cat(parts, 0));
  tr::TransformerOutput out;
  out.video = sum.narrow(0, 0, nv).contiguous().view(partial.video.shape());
  if (partial.audio.defined())
    out.audio = sum.narrow(0, nv, partial.audio.numel()).contiguous().view(partial.audio.shape());
  return out;
}

}  // namespace ltx2::parallel
