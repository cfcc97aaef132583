// The reference's distributed decode plan: its causal tiles and masks, its assembly order, and its
// tiles through the one TileBlender (mapped to [0, 1] per tile, then 8-bit frames).
#include "ops/elementwise.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "parallel/vae_tile_plan.h"
#include "support/catch.h"
#include "support/test_util.h"
#include "tiling/tile_blender.h"

using namespace ltx2;
using namespace ltx2::parallel;
using tiling::AxisTiling;
using tiling::TilePlan;

namespace {

// Decoded tiles [F, H, W, 3] in [-scale, scale] (the decoder's range, and beyond it).
std::vector<Tensor> random_tiles(const TilePlan& plan, float scale, uint64_t seed) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& p = plan.tiles[i].out;
    out.push_back(
        ops::mul(test::random_tensor({p[0].length(), p[1].length(), p[2].length(), 3}, seed + i), scale));
  }
  return out;
}

// The driver's blend: tiles in assembly order, each mapped to [0, 1]; [F, H, W, 3] float32.
Tensor blend_unit(const TilePlan& plan, const std::vector<Tensor>& tiles, int world) {
  tiling::TileBlender blender(plan, 1, 3);
  std::vector<Tensor> chunks;
  for (int64_t t : assembly_order(plan, world))
    for (const Tensor& c : blender.add(static_cast<size_t>(t), decoded_tile_to_unit(tiles[t])))
      chunks.push_back(c);
  REQUIRE(blender.done());
  return ops::cat(chunks, 2).select(0, 0).permute({1, 2, 3, 0}).contiguous();
}

// The blend as tensor ops in the same order (zeros, then dst + unit * ((m_f * m_h) * m_w) per tile,
// then / the summed masks when they are not complementary): what the blender must give bit for bit.
Tensor tensor_op_blend(const TilePlan& plan, const std::vector<Tensor>& tiles, int world) {
  const tiling::GridExtent& e = plan.out_extent;
  Tensor out = Tensor::zeros({e[0], e[1], e[2], 3}), weight = Tensor::zeros({e[0], e[1], e[2], 1});
  for (int64_t i : assembly_order(plan, world)) {
    const tiling::Tile& t = plan.tiles[static_cast<size_t>(i)];
    const Tensor w = Tensor::from_vector(tiling::outer_product_mask(t.masks),
                                         {t.out[0].length(), t.out[1].length(), t.out[2].length(), 1});
    const auto region = [&](const Tensor& x) {
      return x.narrow(0, t.out[0].start, t.out[0].length())
          .narrow(1, t.out[1].start, t.out[1].length())
          .narrow(2, t.out[2].start, t.out[2].length());
    };
    const Tensor unit = decoded_tile_to_unit(tiles[i]).select(0, 0).permute({1, 2, 3, 0});
    Tensor dst = region(out);
    dst.copy_(ops::add(dst, ops::mul(unit, w)));
    Tensor wdst = region(weight);
    wdst.copy_(ops::add(wdst, w));
  }
  return plan.masks_complementary ? out : ops::div(out, ops::maximum(weight, Tensor::scalar(1e-8f)));
}

}  // namespace

TEST_CASE("vae: the reference plan's tiles blend as the tensor ops do, and its 8-bit frames truncate that") {
  // A complementary plan (2 x 2 x 2 tiles) and a dense one (width tiles shorter than their ramps).
  const TilePlan plans[] = {
      plan_vae_tiles({4, 3, 5},
                     {AxisTiling::by_count(2, 1), AxisTiling::by_count(2, 1), AxisTiling::by_count(2, 2)},
                     {8, 4, 4}),
      plan_vae_tiles({2, 2, 9}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(3, 3)}, {8, 4, 4})};
  for (const TilePlan& plan : plans) {
    INFO((plan.masks_complementary ? "complementary" : "dense"));
    const std::vector<Tensor> tiles = random_tiles(plan, 1.2f, 40);
    const Tensor blended = blend_unit(plan, tiles, 3);
    REQUIRE(test::max_abs_diff(blended, tensor_op_blend(plan, tiles, 3)) == 0.f);
    // bf16 tiles are read as their float32 values.
    std::vector<Tensor> half, widened;
    for (const Tensor& t : tiles) {
      half.push_back(t.to(DType::BF16));
      widened.push_back(half.back().to(DType::F32));
    }
    REQUIRE(test::max_abs_diff(blend_unit(plan, half, 3), blend_unit(plan, widened, 3)) == 0.f);
    // 8-bit frames: every value truncated from the blend.
    const Tensor frames = blended.permute({3, 0, 1, 2}).unsqueeze(0).contiguous();
    const Tensor rgb8 = unit_frames_to_rgb8(frames);
    REQUIRE(rgb8.dtype() == DType::U8);
    REQUIRE(rgb8.shape() == blended.shape());
    const std::vector<float> bytes = rgb8.to_vector(), values = blended.to_vector();
    size_t mismatches = 0;
    for (size_t i = 0; i < values.size(); ++i) mismatches += bytes[i] != ops::unit_to_u8(values[i]);
    REQUIRE(mismatches == 0);
  }
}

TEST_CASE("vae: causal temporal tiles give the primed frame weight 0 and complementary masks") {
  TilePlan plan = plan_vae_tiles(
      {4, 2, 6}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling::by_count(2, 2)}, {8, 4, 4});
  REQUIRE(plan.out_extent == tiling::GridExtent{25, 8, 24});
  REQUIRE(plan.tiles.size() == 4);
  const tiling::Tile& later = plan.tiles[2];
  REQUIRE(later.in[0].start == 1);
  REQUIRE(later.out[0].start == 8);
  REQUIRE(later.masks[0][0] == 0.f);
  REQUIRE(plan.masks_complementary);
  // Decoder value 0.5 maps to 0.75 in every tile: the blend gives it back everywhere.
  std::vector<Tensor> tiles;
  for (const tiling::Tile& t : plan.tiles)
    tiles.push_back(Tensor::full({t.out[0].length(), t.out[1].length(), t.out[2].length(), 3}, 0.5f));
  const Tensor video = blend_unit(plan, tiles, 3);
  REQUIRE(video.shape() == Shape{25, 8, 24, 3});
  REQUIRE(test::max_abs_diff(video, Tensor::full(video.shape(), 0.75f)) < 1e-6f);
}

TEST_CASE("vae: tiles shorter than their ramps are normalised by their summed weights") {
  // Latent width 9 in 3 tiles with overlap 3: the middle tile (5) is shorter than its ramps (3+3).
  TilePlan plan =
      plan_vae_tiles({1, 2, 9}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(3, 3)}, {8, 2, 2});
  REQUIRE_FALSE(plan.masks_complementary);
  std::vector<Tensor> tiles;
  for (const tiling::Tile& t : plan.tiles)
    tiles.push_back(Tensor::full({t.out[0].length(), t.out[1].length(), t.out[2].length(), 3}, 0.f));
  const Tensor video = blend_unit(plan, tiles, 2);
  REQUIRE(test::max_abs_diff(video, Tensor::full(video.shape(), 0.5f)) < 1e-6f);
}

TEST_CASE("vae: assembly order is by temporal group, then rank, then each rank's order") {
  const TilePlan wide =
      plan_vae_tiles({1, 2, 10}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(5, 1)}, {8, 2, 2});
  REQUIRE(assembly_order(wide, 2) == std::vector<int64_t>{0, 2, 4, 1, 3});
  // Two temporal groups of two tiles each over 2 ranks: rank 1's group-0 tile comes before rank
  // 0's group-1 tile.
  const TilePlan both = plan_vae_tiles(
      {4, 2, 4}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling::by_count(2, 1)}, {8, 2, 2});
  REQUIRE(assembly_order(both, 2) == std::vector<int64_t>{0, 1, 2, 3});
  REQUIRE(assembly_order(both, 3) == std::vector<int64_t>{0, 1, 3, 2});
}
