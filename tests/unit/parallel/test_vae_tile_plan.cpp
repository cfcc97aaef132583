// Distributed VAE decode: masks, normalisation, the temporal-split guard and assembly.
#include "error_text.h"
#include "ops/shape.h"
#include "parallel/vae_tile_plan.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::parallel;

namespace {

// Every tile decoded as the same constant image: a correct assembly gives that constant back.
std::vector<DecodedTile> constant_tiles(const VaeTilePlan& plan, float value) {
  std::vector<DecodedTile> out;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& p = plan.tiles[i].pixel;
    out.push_back(
        {static_cast<int64_t>(i), Tensor::full({p[0].length(), p[1].length(), p[2].length(), 3}, value)});
  }
  return out;
}

Tensor assemble_all(const VaeTilePlan& plan, const std::vector<DecodedTile>& tiles, int world) {
  Tensor weights = masks_are_complementary(plan) ? Tensor{} : dense_blend_weights(plan);
  std::vector<Tensor> batches;
  for (auto [start, stop] : temporal_batches(plan.pixel_extent[0], world))
    batches.push_back(assemble_frames(plan, tiles, start, stop, weights));
  return ops::cat(batches, 0);
}

}  // namespace

TEST_CASE("vae: causal temporal tiles give the primed frame weight 0 and complementary masks") {
  VaeTilePlan plan = plan_vae_tiles({4, 2, 6}, {AxisTiling{2, 1}, AxisTiling{}, AxisTiling{2, 2}}, {8, 4, 4});
  REQUIRE(plan.pixel_extent == GridExtent{25, 8, 24});
  REQUIRE(plan.tiles.size() == 4);
  const VaeTile& later = plan.tiles[2];
  REQUIRE(later.latent[0].start == 1);
  REQUIRE(later.pixel[0].start == 8);
  REQUIRE(later.masks[0][0] == 0.f);
  REQUIRE(masks_are_complementary(plan));
  Tensor video = assemble_all(plan, constant_tiles(plan, 0.75f), 3);
  REQUIRE(video.shape() == Shape{25, 8, 24, 3});
  REQUIRE(test::max_abs_diff(video, Tensor::full(video.shape(), 0.75f)) < 1e-6f);
}

TEST_CASE("vae: tiles shorter than their ramps fall back to dense normalisation") {
  // Latent width 9 in 3 tiles with overlap 3: the middle tile (5) is shorter than its ramps (3+3).
  VaeTilePlan plan = plan_vae_tiles({1, 2, 9}, {AxisTiling{}, AxisTiling{}, AxisTiling{3, 3}}, {8, 2, 2});
  REQUIRE_FALSE(masks_are_complementary(plan));
  Tensor video = assemble_all(plan, constant_tiles(plan, 0.5f), 2);
  REQUIRE(test::max_abs_diff(video, Tensor::full(video.shape(), 0.5f)) < 1e-6f);
}

TEST_CASE("vae: temporal batches drop empty ones and cover every frame once") {
  auto b = temporal_batches(9, 4);
  REQUIRE(b == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 9}});
  REQUIRE(temporal_batches(25, 3).back() == std::pair<int64_t, int64_t>{18, 25});
  REQUIRE(assembly_order(5, 2) == std::vector<int64_t>{0, 2, 4, 1, 3});
}

TEST_CASE("vae: the two-temporal-split guard refuses on every rank, even where the reference would not") {
  // Latent F=3 split in 2 with overlap 1: pixel tiles of 9 and 17 frames. With a 16/8 single-GPU
  // split only the 17-frame tile would be cut again; the reference refused on that tile's ranks
  // only and hung. The decision here depends on all tiles, so it is the same on every rank.
  VaeTilePlan plan = plan_vae_tiles({3, 2, 2}, {AxisTiling{2, 1}, AxisTiling{}, AxisTiling{}}, {8, 4, 4});
  REQUIRE(plan.tiles[0].pixel[0].length() == 9);
  REQUIRE(plan.tiles[1].pixel[0].length() == 17);
  auto sgpu = [](int64_t frames) { return sgpu_temporal_chunks(frames, 16, 8); };
  REQUIRE(sgpu(9) == 1);
  REQUIRE(sgpu(17) == 2);
  const std::string message = test::error_text([&] { check_single_temporal_split(plan, {2, 1}, sgpu); });
  REQUIRE(test::contains(message, "17 frames -> 2 chunks"));
  REQUIRE_NOTHROW(check_single_temporal_split(plan, {1, 0}, sgpu));
  REQUIRE(sgpu_temporal_chunks(121, 80, 24) == 3);
  REQUIRE(sgpu_temporal_chunks(1, 80, 24) == 1);
}
