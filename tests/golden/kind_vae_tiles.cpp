// Check runner for `vae_tiles` cases: for each config's latent grid and tiling, the latent and
// pixel boxes, pixel-unit masks, complementarity, and the per-tile chunk count of the default
// single-GPU tile-size config (80 frames, overlap 24).
#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "golden/sims/vae_rank_sim.h"
#include "golden/tile_case_util.h"
#include "parallel/vae_tile_plan.h"

namespace ltx2::golden {

namespace {

// The single-GPU TileSizeConfig.default() temporal tile (pixel frames).
constexpr int64_t kDefaultTileFrames = 80, kDefaultOverlapFrames = 24;

void run_config(const GoldenCase& c, Report& report, int index, const VaeScale& scale) {
  const std::string tag = fmt::format("c{}", index);
  const auto fhw = c.tensor("in." + tag + ".latent_fhw").to_vector_i64();
  const tiling::TilePlan plan = parallel::plan_vae_tiles(
      {fhw.at(0), fhw.at(1), fhw.at(2)},
      grid_tiling_from_counts(c.tensor("in." + tag + ".counts_overlaps").to_vector_i64()), scale);
  std::vector<int64_t> latent_boxes, pixel_boxes, frames, chunks;
  std::array<std::vector<float>, 3> masks;
  for (const auto& t : plan.tiles) {
    for (int a = 0; a < 3; ++a) {
      latent_boxes.insert(latent_boxes.end(), {t.in[a].start, t.in[a].stop});
      pixel_boxes.insert(pixel_boxes.end(), {t.out[a].start, t.out[a].stop});
      masks[a].insert(masks[a].end(), t.masks[a].begin(), t.masks[a].end());
    }
    frames.push_back(t.out[0].length());
    chunks.push_back(sgpu_temporal_chunks(t.out[0].length(), kDefaultTileFrames, kDefaultOverlapFrames));
  }
  const auto n = static_cast<int64_t>(plan.tiles.size());
  check_output(c, report, tag + ".latent_boxes", i64_tensor(latent_boxes, {n, 3, 2}), {});
  check_output(c, report, tag + ".pixel_boxes", i64_tensor(pixel_boxes, {n, 3, 2}), {});
  check_output(c, report, tag + ".pixel_fhw",
               i64_tensor({plan.out_extent[0], plan.out_extent[1], plan.out_extent[2]}, {3}), {});
  const Tolerance masks_tol = tolerance_for(c, "masks", {});
  const char* axis[3] = {"f", "h", "w"};
  for (int a = 0; a < 3; ++a)
    check_output(c, report, tag + ".masks_1d_" + axis[a], f32_tensor(masks[a]), masks_tol);
  check_output(c, report, tag + ".complementary", i64_tensor({plan.masks_complementary ? 1 : 0}, {1}), {});
  check_output(c, report, tag + ".tile_pixel_frames", i64_tensor(frames, {n}), {});
  check_output(c, report, tag + ".sgpu_default_chunks", i64_tensor(chunks, {n}), {});
}

void run_vae_tiles(const GoldenCase& c, Report& report) {
  const VaeScale scale = vae_scale_from_case(c);
  for (const auto& cfg : c.spec().at("configs")) run_config(c, report, cfg.at("index").get<int>(), scale);
}

}  // namespace

static const bool registered = register_kind_runner("vae_tiles", &run_vae_tiles);

}  // namespace ltx2::golden
