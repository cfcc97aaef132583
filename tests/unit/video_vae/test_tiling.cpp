// Tile splitting, trapezoid masks, the decode plan and the blender (on synthetic tiles).
#include "models/video_vae/tiling.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::video_vae;

TEST_CASE("tiling: split_by_size and the causal temporal split") {
  auto s = split_by_size(7, 3, 1);
  REQUIRE(s.size() == 3);
  REQUIRE((s[0].start == 0 && s[0].end == 3 && s[0].left_ramp == 0 && s[0].right_ramp == 1));
  REQUIRE((s[1].start == 2 && s[1].end == 5 && s[1].left_ramp == 1 && s[1].right_ramp == 1));
  REQUIRE((s[2].start == 4 && s[2].end == 7 && s[2].left_ramp == 1 && s[2].right_ramp == 0));
  REQUIRE(split_by_size(3, 3, 1).size() == 1);
  auto t = split_temporal_causal(4, 3, 1);
  REQUIRE(t.size() == 2);
  REQUIRE((t[1].start == 1 && t[1].end == 4 && t[1].left_ramp == 2));
}

TEST_CASE("tiling: trapezoid masks") {
  REQUIRE(trapezoid_mask(5, 2, 0, true) == std::vector<float>{0.f, 0.5f, 1.f, 1.f, 1.f});
  auto m = trapezoid_mask(5, 1, 2, false);
  REQUIRE(m[0] == Approx(0.5));
  REQUIRE(m[2] == 1.f);
  REQUIRE(m[3] == Approx(2.0 / 3));
  REQUIRE(m[4] == Approx(1.0 / 3));
}

TEST_CASE("tiling: plan masks are complementary and the blender rebuilds a constant video") {
  const VideoScaleFactors f{8, 32, 32};
  const TileSizeConfig cfg{{24, 8}, {64, 32}, {0, 0}};
  const Shape latent = {1, 4, 5, 3, 2};
  DecodeTilePlan plan = plan_tiled_decode(latent, 3, cfg, f);
  REQUIRE(plan.video_shape == Shape{1, 3, 33, 96, 64});
  REQUIRE(plan.masks_complementary);
  REQUIRE(plan.temporal_groups == 2);
  REQUIRE(plan.tiles.size() == 4);
  TileBlender blender(plan);
  std::vector<Tensor> chunks;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& a = plan.tiles[i].axes;
    Tensor tile = Tensor::full({1, 3, a[0].pixel_end - a[0].pixel_start, a[1].pixel_end - a[1].pixel_start,
                                a[2].pixel_end - a[2].pixel_start},
                               2.f);
    for (Tensor& c : blender.add(i, tile)) chunks.push_back(c);
  }
  REQUIRE(blender.done());
  Tensor video = ops::cat(chunks, 2);
  REQUIRE(video.shape() == plan.video_shape);
  REQUIRE(test::max_abs_diff(video, Tensor::full(plan.video_shape, 2.f)) < 1e-6f);
}

TEST_CASE("tiling: illegal sizes are refused naming the axis, groups must arrive in order") {
  const VideoScaleFactors f{8, 32, 32};
  REQUIRE_THROWS_WITH(plan_tiled_decode({1, 4, 5, 3, 2}, 3, {{0, 0}, {48, 0}, {0, 0}}, f),
                      Catch::Matchers::Contains("height tile size 48"));
  REQUIRE_THROWS_WITH(plan_tiled_decode({1, 4, 5, 3, 2}, 3, {{24, 24}, {0, 0}, {0, 0}}, f),
                      Catch::Matchers::Contains("frames overlap 24"));
  DecodeTilePlan plan = plan_tiled_decode({1, 4, 5, 3, 2}, 3, {{24, 8}, {0, 0}, {0, 0}}, f);
  TileBlender blender(plan);
  REQUIRE_THROWS(blender.add(1, Tensor::zeros({1, 3, 1, 1, 1})));
}

TEST_CASE("tiling: the pipelines' automatic decode tiling scales the short side on the latent grid") {
  const VideoScaleFactors f{8, 32, 32};
  TileSizeConfig big = TileSizeConfig::automatic(1024, 1536, f);
  REQUIRE((big.height.tile_size == 512 && big.width.tile_size == 768));
  REQUIRE((big.height.overlap == 64 && big.width.overlap == 64));
  REQUIRE((big.frames.tile_size == 80 && big.frames.overlap == 24));
  TileSizeConfig small = TileSizeConfig::automatic(512, 768, f);
  REQUIRE((small.height.tile_size == 512 && small.width.tile_size == 768));
  DecodeTilePlan plan = plan_tiled_decode({1, 128, 16, 16, 24}, 3, small, f);
  REQUIRE(plan.tiles.size() == 2);  // spatially one tile, two temporal chunks
  REQUIRE(TileSizeConfig::from_long_side({768, 64}, 96, 1536, f, {}).height.tile_size == 96);
}
