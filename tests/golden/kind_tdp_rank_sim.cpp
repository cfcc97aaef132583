// Check runner for `tdp_rank_sim` cases: every rank of each simulated world size (out.wsN.*) runs
// our tiled-data-parallel forward around the fixture's stub model; compares the tile assignment,
// each rank's pre-all_reduce partials and their sum. A rank left without tiles (case.json
// "extra.empty_rank", where the reference asserts) must contribute zeros.
#include <regex>
#include <set>

#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/tdp_stub_model.h"
#include "golden/tile_case_util.h"
#include "ops/elementwise.h"
#include "parallel/tdp.h"

namespace ltx2::golden {

namespace {

// The latent grid is the extent the tile boxes cover.
tiling::GridExtent grid_from_boxes(const nlohmann::json& boxes) {
  tiling::GridExtent g{0, 0, 0};
  for (const auto& box : boxes)
    for (int a = 0; a < 3; ++a) g[a] = std::max(g[a], box.at(a).at(1).get<int64_t>());
  return g;
}

std::set<int> world_sizes(const GoldenCase& c) {
  static const std::regex name(R"(out\.ws(\d+)\.assignment)");
  std::set<int> out;
  for (const std::string& n : c.names("out.ws")) {
    std::smatch m;
    if (std::regex_match(n, m, name)) out.insert(std::stoi(m[1]));
  }
  return out;
}

void run_tdp_rank_sim(const GoldenCase& c, Report& report) {
  const auto& tiling = c.spec().at("tiling");
  parallel::TdpTilePlan plan(
      grid_from_boxes(c.spec().at("tile_boxes")),
      {axis_tiling_from_json(tiling, "frames"), axis_tiling_from_json(tiling, "height"),
       axis_tiling_from_json(tiling, "width")});
  std::vector<int64_t> boxes;
  for (const auto& t : plan.tiles())
    for (int a = 0; a < 3; ++a) boxes.insert(boxes.end(), {t.in[a].start, t.in[a].stop});
  std::vector<int64_t> expected_boxes;
  for (const auto& box : c.spec().at("tile_boxes"))
    for (const auto& axis : box) expected_boxes.insert(expected_boxes.end(), {axis.at(0), axis.at(1)});
  const auto n_tiles = static_cast<int64_t>(plan.tiles().size());
  check_exact_i64(report, "tile_boxes (case.json)", i64_tensor(boxes, {n_tiles, 3, 2}),
                  i64_tensor(expected_boxes, {static_cast<int64_t>(expected_boxes.size() / 6), 3, 2}));

  const parallel::TokenSequence video = read_token_sequence(c, "in.video.");
  const Tensor audio = c.has("in.audio.latent") ? c.tensor("in.audio.latent") : Tensor{};
  const parallel::TileModel model = [&](const parallel::TokenSequence& tile) {
    return tdp_stub_model(tile, audio);
  };
  const Tolerance tol = tolerance_for(c, "tensors", {});

  for (int ws : world_sizes(c)) {
    const std::string tag = fmt::format("ws{}", ws);
    std::vector<int64_t> assignment(static_cast<size_t>(n_tiles));
    Tensor video_sum = Tensor::zeros(video.latent.shape());
    Tensor audio_sum = audio.defined() ? Tensor::zeros(audio.shape()) : Tensor{};
    for (int r = 0; r < ws; ++r) {
      for (int64_t t : tiling::tiles_for_rank(n_tiles, r, ws)) assignment[t] = r;
      parallel::TdpPartial p = parallel::tdp_rank_partial(plan, video, audio, r, ws, model);
      const std::string rank = fmt::format("{}.r{}", tag, r);
      check_output(c, report, rank + ".video_partial", p.video, tol);
      video_sum = ops::add(video_sum, p.video);
      if (audio.defined()) {
        check_output(c, report, rank + ".audio_partial", p.audio, tol);
        audio_sum = ops::add(audio_sum, p.audio);
      }
    }
    check_output(c, report, tag + ".assignment", i64_tensor(assignment, {n_tiles}), {});
    check_output(c, report, tag + ".video_sum", video_sum, tol);
    if (audio.defined()) check_output(c, report, tag + ".audio_sum", audio_sum, tol);
  }

  if (c.spec().contains("extra") && c.spec()["extra"].contains("empty_rank")) {
    const auto& e = c.spec()["extra"]["empty_rank"];
    const int ws = e.at("world_size").get<int>(), rank = e.at("rank").get<int>();
    parallel::TdpPartial p = parallel::tdp_rank_partial(plan, video, audio, rank, ws, model);
    const std::string tag = fmt::format("idle rank {}/{} gives zeros", rank, ws);
    report.check(tag + " (video)", p.video, Tensor::zeros(video.latent.shape()), {});
    if (audio.defined()) report.check(tag + " (audio)", p.audio, Tensor::zeros(audio.shape()), {});
  }
}

}  // namespace

static const bool registered = register_kind_runner("tdp_rank_sim", &run_tdp_rank_sim);

}  // namespace ltx2::golden
