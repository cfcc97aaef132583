// The reference's decode-side computations simulated for its fixtures: dense weights, temporal
// batches and the two-temporal-split guard.
#include "golden/sims/vae_rank_sim.h"
#include "parallel/vae_tile_plan.h"
#include "support/catch.h"
#include "support/error_text.h"

using namespace ltx2;
using namespace ltx2::golden;
using tiling::AxisTiling;

TEST_CASE("vae sims: temporal batches drop empty ones and cover every frame once") {
  auto b = temporal_batches(9, 4);
  REQUIRE(b == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}, {6, 9}});
  REQUIRE(temporal_batches(25, 3).back() == std::pair<int64_t, int64_t>{18, 25});
}

TEST_CASE("vae sims: dense weights sum the masks and are 1 where the masks are complementary") {
  const auto plan = parallel::plan_vae_tiles(
      {2, 2, 5}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(2, 1)}, {8, 2, 2});
  REQUIRE(plan.masks_complementary);
  const std::vector<float> w = dense_blend_weights(plan).to_vector();
  for (float v : w) REQUIRE(v == Approx(1.f).margin(1e-6));
}

TEST_CASE(
    "vae sims: the two-temporal-split guard refuses on every rank, even where the reference would not") {
  // Latent F=3 split in 2 with overlap 1: pixel tiles of 9 and 17 frames. With a 16/8 single-GPU
  // split only the 17-frame tile would be cut again; the reference refused on that tile's ranks
  // only and hung. The decision here depends on all tiles, so it is the same on every rank.
  const auto plan = parallel::plan_vae_tiles(
      {3, 2, 2}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling{}}, {8, 4, 4});
  REQUIRE(plan.tiles[0].out[0].length() == 9);
  REQUIRE(plan.tiles[1].out[0].length() == 17);
  auto sgpu = [](int64_t frames) { return sgpu_temporal_chunks(frames, 16, 8); };
  REQUIRE(sgpu(9) == 1);
  REQUIRE(sgpu(17) == 2);
  const std::string message =
      test::error_text([&] { check_single_temporal_split(plan, AxisTiling::by_count(2, 1), sgpu); });
  REQUIRE(test::contains(message, "17 frames -> 2 chunks"));
  REQUIRE_NOTHROW(check_single_temporal_split(plan, AxisTiling::by_count(1, 0), sgpu));
  REQUIRE(sgpu_temporal_chunks(121, 80, 24) == 3);
  REQUIRE(sgpu_temporal_chunks(1, 80, 24) == 1);
}
