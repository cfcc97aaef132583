// The decode tile plan from tile-size configs, and the blender (on synthetic tiles).
#include "models/video_vae/tiling.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "tiling/tile_blender.h"

using namespace ltx2;
using namespace ltx2::video_vae;

TEST_CASE("decode tiles: plan masks are complementary and the blender rebuilds a constant video") {
  const VideoScaleFactors f{8, 32, 32};
  const TileSizeConfig cfg{AxisTiling::by_size(24, 8), AxisTiling::by_size(64, 32), AxisTiling{}};
  const Shape latent = {1, 4, 5, 3, 2};
  DecodeTilePlan plan = plan_tiled_decode(latent, 3, cfg, f);
  REQUIRE(plan.video_shape == Shape{1, 3, 33, 96, 64});
  REQUIRE(plan.masks_complementary);
  REQUIRE(plan.temporal_groups == 2);
  REQUIRE(plan.tiles.size() == 4);
  tiling::TileBlender blender(plan, 1, 3);
  std::vector<Tensor> chunks;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& a = plan.tiles[i].out;
    Tensor tile = Tensor::full({1, 3, a[0].length(), a[1].length(), a[2].length()}, 2.f);
    for (Tensor& c : blender.add(i, tile)) chunks.push_back(c);
  }
  REQUIRE(blender.done());
  Tensor video = ops::cat(chunks, 2);
  REQUIRE(video.shape() == plan.video_shape);
  REQUIRE(test::max_abs_diff(video, Tensor::full(plan.video_shape, 2.f)) < 1e-6f);
}

TEST_CASE("decode tiles: illegal sizes are refused naming the axis, groups must arrive in order") {
  const VideoScaleFactors f{8, 32, 32};
  REQUIRE_THROWS_WITH(
      plan_tiled_decode({1, 4, 5, 3, 2}, 3, {AxisTiling{}, AxisTiling::by_size(48, 0), AxisTiling{}}, f),
      Catch::Matchers::Contains("height tile size 48"));
  REQUIRE_THROWS_WITH(
      plan_tiled_decode({1, 4, 5, 3, 2}, 3, {AxisTiling::by_size(24, 24), AxisTiling{}, AxisTiling{}}, f),
      Catch::Matchers::Contains("frames overlap 24"));
  DecodeTilePlan plan =
      plan_tiled_decode({1, 4, 5, 3, 2}, 3, {AxisTiling::by_size(24, 8), AxisTiling{}, AxisTiling{}}, f);
  tiling::TileBlender blender(plan, 1, 3);
  REQUIRE_THROWS(blender.add(1, Tensor::zeros({1, 3, 1, 1, 1})));
}

TEST_CASE("decode tiles: the pipelines' automatic decode tiling scales the short side on the latent grid") {
  const VideoScaleFactors f{8, 32, 32};
  TileSizeConfig big = TileSizeConfig::automatic(1024, 1536, f);
  REQUIRE((big.height.value == 512 && big.width.value == 768));
  REQUIRE((big.height.overlap == 64 && big.width.overlap == 64));
  REQUIRE((big.frames.value == 80 && big.frames.overlap == 24));
  TileSizeConfig small = TileSizeConfig::automatic(512, 768, f);
  REQUIRE((small.height.value == 512 && small.width.value == 768));
  DecodeTilePlan plan = plan_tiled_decode({1, 128, 16, 16, 24}, 3, small, f);
  REQUIRE(plan.tiles.size() == 2);  // spatially one tile, two temporal chunks
  REQUIRE(TileSizeConfig::from_long_side(AxisTiling::by_size(768, 64), 96, 1536, f, {}).height.value == 96);
}
