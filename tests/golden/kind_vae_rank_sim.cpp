// Check runner for `vae_rank_sim` cases: each simulated rank decodes its round-robin tiles with the
// fixture's stub decoder; the driver blends them with ltx2's TileBlender in assembly order (the
// reference's dense normaliser and temporal batches are simulated and compared on their own).
// Compares assignment, boxes, batch lengths, the dense weights and the video;
// the stub's tiles are also compared with the fixture's decoded tiles. case.json "sgpu_guard"
// scenarios check the two-temporal-split guard, which we evaluate over all tiles so every rank
// decides alike (where the reference's decision differs between ranks, all of ours must refuse).
#include <regex>

#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/sims/vae_rank_sim.h"
#include "golden/tile_case_util.h"
#include "golden/vae_stub_decoder.h"
#include "ops/shape.h"
#include "parallel/vae_tile_plan.h"
#include "tiling/tile_blender.h"

namespace ltx2::golden {

namespace {

Tensor latent_tile(const Tensor& latent, const tiling::Tile& t) {
  Tensor x = latent;
  for (int a = 0; a < 3; ++a) x = x.narrow(2 + a, t.in[a].start, t.in[a].length());
  return x.contiguous();
}

void run_config(const GoldenCase& c, Report& report, const nlohmann::json& cfg, const VaeScale& scale) {
  const std::string name = cfg.at("name").get<std::string>();
  const int ws = cfg.at("world_size").get<int>();
  const Tensor latent = c.tensor("in." + name + ".latent");
  LTX2_CHECK(latent.dim() == 5, "in.{}.latent must be [B, C, F, H, W], got {}", name,
             shape_str(latent.shape()));
  const tiling::TilePlan plan = parallel::plan_vae_tiles({latent.size(2), latent.size(3), latent.size(4)},
                                                         grid_tiling_from_json(cfg), scale);
  const auto n = static_cast<int64_t>(plan.tiles.size());

  // Every rank decodes its own tiles; the driver receives them all and blends them in assembly
  // order.
  std::vector<int64_t> assignment(static_cast<size_t>(n));
  std::vector<Tensor> decoded(static_cast<size_t>(n));  // [F, H, W, C] pixels in [0, 1]
  for (int r = 0; r < ws; ++r)
    for (int64_t t : tiling::tiles_for_rank(n, r, ws)) {
      assignment[t] = r;
      decoded[t] = vae_stub_decode(latent_tile(latent, plan.tiles[t]), scale);
      const std::string ref = fmt::format("in.{}.tile{}.pixels", name, t);
      if (c.has(ref)) report.check("stub " + ref, decoded[t], c.tensor(ref), tolerance_for(c, "video", {}));
    }
  const int64_t channels = decoded.front().size(3);
  tiling::TileBlender blender(plan, 1, channels);
  std::vector<Tensor> chunks;
  for (int64_t t : parallel::assembly_order(plan, ws))
    for (const Tensor& chunk : blender.add(t, decoded[t].permute({3, 0, 1, 2}).unsqueeze(0).contiguous()))
      chunks.push_back(chunk.select(0, 0).permute({1, 2, 3, 0}));
  const Tensor video = ops::cat(chunks, 0).contiguous();

  // The reference's own normaliser and output batches, which ltx2's driver does not form.
  if (!plan.masks_complementary && c.has("mid." + name + ".dense_weights"))
    report.check("mid." + name + ".dense_weights", dense_blend_weights(plan),
                 c.tensor("mid." + name + ".dense_weights"), tolerance_for(c, "video", {}));
  std::vector<int64_t> lengths;
  for (auto [start, stop] : temporal_batches(plan.out_extent[0], ws)) lengths.push_back(stop - start);

  std::vector<int64_t> latent_boxes, pixel_boxes;
  for (const auto& t : plan.tiles)
    for (int a = 0; a < 3; ++a) {
      latent_boxes.insert(latent_boxes.end(), {t.in[a].start, t.in[a].stop});
      pixel_boxes.insert(pixel_boxes.end(), {t.out[a].start, t.out[a].stop});
    }
  check_output(c, report, name + ".assignment", i64_tensor(assignment, {n}), {});
  check_output(c, report, name + ".latent_boxes", i64_tensor(latent_boxes, {n, 3, 2}), {});
  check_output(c, report, name + ".pixel_boxes", i64_tensor(pixel_boxes, {n, 3, 2}), {});
  check_output(c, report, name + ".batch_lengths",
               i64_tensor(lengths, {static_cast<int64_t>(lengths.size())}), {});
  check_output(c, report, name + ".video", video, tolerance_for(c, "video", {}));
}

// One "sgpu_guard" scenario, on the first config of its world size with tiled frames.
void run_guard(const GoldenCase& c, Report& report, const nlohmann::json& g, size_t index,
               const VaeScale& scale) {
  const int ws = g.at("world_size").get<int>();
  const nlohmann::json* cfg = nullptr;
  for (const auto& x : c.spec().at("configs"))
    if (x.at("world_size").get<int>() == ws && grid_tiling_from_json(x)[0].value > 1) cfg = &x;
  LTX2_CHECK(cfg, "sgpu_guard[{}]: no config with world size {} and tiled frames", index, ws);
  tiling::GridTiling tiling = grid_tiling_from_json(*cfg);
  if (g.at("vae_tiling").get<std::string>().find("untiled") != std::string::npos) tiling[0] = {};
  std::smatch m;
  const std::string sgpu = g.at("sgpu_tiling").get<std::string>();
  LTX2_CHECK(std::regex_search(sgpu, m, std::regex(R"((\d+)/(\d+))")), "sgpu_guard[{}]: cannot read '{}'",
             index, sgpu);
  const int64_t tile = std::stoll(m[1]), overlap = std::stoll(m[2]);
  const Tensor latent = c.tensor("in." + cfg->at("name").get<std::string>() + ".latent");
  const tiling::TilePlan plan =
      parallel::plan_vae_tiles({latent.size(2), latent.size(3), latent.size(4)}, tiling, scale);

  bool any_refused = false;
  for (const auto& r : g.at("per_rank"))
    any_refused |= r.at("outcome").get<std::string>().rfind("ValueError", 0) == 0;
  for (const auto& r : g.at("per_rank")) {
    CompareRow row;
    row.name = fmt::format("sgpu_guard[{}] rank {}", index, r.at("rank").get<int>());
    bool refused = false;
    try {
      check_single_temporal_split(
          plan, tiling[0], [&](int64_t frames) { return sgpu_temporal_chunks(frames, tile, overlap); });
    } catch (const Error&) {
      refused = true;
    }
    row.pass = refused == any_refused;
    if (!row.pass) row.note = refused ? "refused, expected ok" : "accepted, expected refusal";
    report.add(row);
  }
}

void run_vae_rank_sim(const GoldenCase& c, Report& report) {
  const VaeScale scale = vae_scale_from_case(c);
  for (const auto& cfg : c.spec().at("configs")) run_config(c, report, cfg, scale);
  if (c.spec().contains("sgpu_guard"))
    for (size_t i = 0; i < c.spec()["sgpu_guard"].size(); ++i)
      run_guard(c, report, c.spec()["sgpu_guard"][i], i, scale);
}

}  // namespace

static const bool registered = register_kind_runner("vae_rank_sim", &run_vae_rank_sim);

}  // namespace ltx2::golden
