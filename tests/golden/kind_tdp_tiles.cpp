// Check runner for `tdp_tiles` cases: tile boxes and blend masks for each combo's grid and tiling,
// balanced_tile_split(1..16), and the detailed layout: per-tile token selection, conditioning keep
// matrix and weights, normalised positions, stub-model outputs, and the blended sum over tiles.
#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/tdp_stub_model.h"
#include "golden/tile_case_util.h"
#include "parallel/tdp.h"

namespace ltx2::golden {

namespace {

// Boxes, concatenated 1-D masks and dense masks of a plan, under out.<tag>.*.
void check_layout(const GoldenCase& c, Report& report, const std::string& tag,
                  const parallel::TdpTilePlan& plan, bool with_1d_masks) {
  const Tolerance masks_tol = tolerance_for(c, "masks/weights", {});
  std::vector<int64_t> boxes;
  std::array<std::vector<float>, 3> masks_1d;
  std::vector<float> dense;
  for (const auto& t : plan.tiles()) {
    for (int a = 0; a < 3; ++a) {
      boxes.insert(boxes.end(), {t.in[a].start, t.in[a].stop});
      masks_1d[a].insert(masks_1d[a].end(), t.masks[a].begin(), t.masks[a].end());
    }
    auto m = tiling::outer_product_mask(t.masks);
    dense.insert(dense.end(), m.begin(), m.end());
  }
  const auto n = static_cast<int64_t>(plan.tiles().size());
  check_output(c, report, tag + ".tile_boxes", i64_tensor(boxes, {n, 3, 2}), {});
  if (with_1d_masks) {
    const char* axis[3] = {"f", "h", "w"};
    for (int a = 0; a < 3; ++a)
      check_output(c, report, tag + ".masks_1d_" + axis[a], f32_tensor(masks_1d[a]), masks_tol);
  }
  check_output(c, report, tag + ".blend_masks", f32_tensor(dense), masks_tol);
}

void run_combo(const GoldenCase& c, Report& report, int index) {
  const std::string tag = fmt::format("c{}", index);
  const auto shape = c.tensor("in." + tag + ".shape_fhw").to_vector_i64();
  parallel::TdpTilePlan plan(
      {shape.at(0), shape.at(1), shape.at(2)},
      grid_tiling_from_counts(c.tensor("in." + tag + ".counts_overlaps").to_vector_i64()));
  check_layout(c, report, tag, plan, true);
  // Partition of unity: blending all-ones tile outputs gives 1 on every cell.
  const int64_t cells = plan.num_generated_tokens();
  Tensor sum = Tensor::zeros({1, cells, 1});
  parallel::TokenSequence ones;
  ones.latent = Tensor::full({1, cells, 1}, 1.f);
  for (size_t t = 0; t < plan.tiles().size(); ++t) {
    parallel::TileTokens ctx;
    ctx.keep = plan.generated_indices(t);
    ctx.num_generated = static_cast<int64_t>(ctx.keep.size());
    ctx.num_total_tokens = cells;
    plan.blend(sum, Tensor::full({1, ctx.num_generated, 1}, 1.f), t, ctx);
  }
  check_output(c, report, tag + ".weight_sum", sum.reshape({cells}), tolerance_for(c, "masks/weights", {}));
}

void run_detail(const GoldenCase& c, Report& report) {
  const auto& d = c.spec().at("detail");
  parallel::TdpTilePlan plan(
      {d.at("F").get<int64_t>(), d.at("H").get<int64_t>(), d.at("W").get<int64_t>()},
      {axis_tiling_from_json(d, "f"), axis_tiling_from_json(d, "h"), axis_tiling_from_json(d, "w")});
  check_layout(c, report, "detail", plan, false);

  const parallel::TokenSequence video = read_token_sequence(c, "in.detail.");

  const auto keep = plan.cond_keep(video.positions);
  std::vector<int64_t> keep_flat;
  for (const auto& row : keep) keep_flat.insert(keep_flat.end(), row.begin(), row.end());
  const auto n_tiles = static_cast<int64_t>(keep.size());
  check_output(c, report, "detail.cond_keep",
               i64_tensor(keep_flat, {n_tiles, n_tiles ? static_cast<int64_t>(keep[0].size()) : 0}), {});

  const Tolerance weights_tol = tolerance_for(c, "masks/weights", {});
  const Tolerance sum_tol = tolerance_for(c, "blend_sum", {});
  Tensor blend_sum = Tensor::zeros(video.latent.shape());
  for (size_t t = 0; t < plan.tiles().size(); ++t) {
    const std::string tag = fmt::format("detail.t{}", t);
    parallel::TileTokens ctx = plan.tile_tokens(video, t, true);
    check_output(c, report, tag + ".keep_indices",
                 i64_tensor(ctx.keep, {static_cast<int64_t>(ctx.keep.size())}), {});
    check_output(c, report, tag + ".cond_weights", f32_tensor(ctx.cond_weights), weights_tol);
    check_output(c, report, tag + ".latent", ctx.tokens.latent, {});
    check_output(c, report, tag + ".timesteps", ctx.tokens.timesteps, {});
    if (ctx.tokens.keyframes_mask.defined())
      check_output(c, report, tag + ".keyframes_mask", ctx.tokens.keyframes_mask, {});
    if (ctx.tokens.attention_mask.defined())
      check_output(c, report, tag + ".attention_mask", ctx.tokens.attention_mask, {});
    check_output(c, report, tag + ".positions_normalized", ctx.tokens.positions, weights_tol);
    if (c.has("mid." + tag + ".position_offset"))
      report.check("mid." + tag + ".position_offset", ctx.position_offset,
                   c.tensor("mid." + tag + ".position_offset"), weights_tol);
    Tensor stub_out = tdp_stub_model(ctx.tokens, Tensor{}).first;
    check_output(c, report, tag + ".stub_out", stub_out, sum_tol);
    plan.blend(blend_sum, stub_out, t, ctx);
  }
  check_output(c, report, "detail.blend_sum", blend_sum, sum_tol);
}

void run_tdp_tiles(const GoldenCase& c, Report& report) {
  for (const auto& combo : c.spec().at("combos")) run_combo(c, report, combo.at("index").get<int>());
  if (c.has("out.balanced_tile_split_1_to_16")) {
    std::vector<int64_t> splits;
    for (int64_t n = 1; n <= 16; ++n) {
      auto [s, l] = tiling::balanced_tile_split(n);
      splits.insert(splits.end(), {s, l});
    }
    check_output(c, report, "balanced_tile_split_1_to_16", i64_tensor(splits, {16, 2}), {});
  }
  if (c.spec().contains("detail")) run_detail(c, report);
}

}  // namespace

static const bool registered = register_kind_runner("tdp_tiles", &run_tdp_tiles);

}  // namespace ltx2::golden
