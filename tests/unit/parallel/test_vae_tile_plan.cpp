// Distributed VAE decode: masks, normalisation, the temporal-split guard and assembly.
#include "ops/elementwise.h"
#include "ops/rgb8.h"
#include "ops/shape.h"
#include "parallel/vae_tile_plan.h"
#include "support/catch.h"
#include "support/error_text.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::parallel;

namespace {

// Every tile decoded as the same constant image: a correct assembly gives that constant back.
std::vector<DecodedTile> constant_tiles(const TilePlan& plan, float value) {
  std::vector<DecodedTile> out;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& p = plan.tiles[i].out;
    out.push_back(
        {static_cast<int64_t>(i), Tensor::full({p[0].length(), p[1].length(), p[2].length(), 3}, value)});
  }
  return out;
}

Tensor assemble_all(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int world) {
  Tensor weights = plan.masks_complementary ? Tensor{} : dense_blend_weights(plan);
  std::vector<Tensor> batches;
  for (auto [start, stop] : temporal_batches(plan.out_extent[0], world))
    batches.push_back(assemble_frames(plan, tiles, start, stop, weights));
  return ops::cat(batches, 0);
}

// The blend as tensor ops (zeros, then dst + pixels * ((m_f * m_h) * m_w) per tile, then / weights):
// the formulation assemble_frames must reproduce bit for bit.
Tensor tensor_op_assembly(const TilePlan& plan, const std::vector<DecodedTile>& tiles, int64_t start,
                          int64_t stop, const Tensor& weights) {
  const GridExtent& e = plan.out_extent;
  Tensor out = Tensor::zeros({stop - start, e[1], e[2], 3});
  for (const DecodedTile& d : tiles) {
    const tiling::Tile& t = plan.tiles[static_cast<size_t>(d.tile)];
    const int64_t lo = std::max(start, t.out[0].start), hi = std::min(stop, t.out[0].stop);
    if (lo >= hi) continue;
    std::array<std::vector<float>, 3> masks = t.masks;
    masks[0] = std::vector<float>(t.masks[0].begin() + (lo - t.out[0].start),
                                  t.masks[0].begin() + (hi - t.out[0].start));
    const Tensor w = Tensor::from_vector(tiling::outer_product_mask(masks),
                                         {hi - lo, t.out[1].length(), t.out[2].length(), 1});
    Tensor dst = out.narrow(0, lo - start, hi - lo)
                     .narrow(1, t.out[1].start, t.out[1].length())
                     .narrow(2, t.out[2].start, t.out[2].length());
    dst.copy_(ops::add(dst, ops::mul(d.pixels.narrow(0, lo - t.out[0].start, hi - lo).to(DType::F32), w)));
  }
  return weights.defined() ? ops::div(out, weights.narrow(0, start, stop - start).unsqueeze(3)) : out;
}

std::vector<DecodedTile> random_tiles(const TilePlan& plan, float scale, uint64_t seed) {
  std::vector<DecodedTile> out;
  for (size_t i = 0; i < plan.tiles.size(); ++i) {
    const auto& p = plan.tiles[i].out;
    out.push_back(
        {static_cast<int64_t>(i),
         ops::mul(test::random_tensor({p[0].length(), p[1].length(), p[2].length(), 3}, seed + i), scale)});
  }
  return out;
}

}  // namespace

TEST_CASE("vae: assembly reproduces the tensor-op blend bit for bit, and its 8-bit frames truncate it") {
  // A complementary plan (2 x 2 x 2 tiles) and a dense one (width tiles shorter than their ramps).
  const TilePlan plans[] = {
      plan_vae_tiles({4, 3, 5},
                     {AxisTiling::by_count(2, 1), AxisTiling::by_count(2, 1), AxisTiling::by_count(2, 2)},
                     {8, 4, 4}),
      plan_vae_tiles({2, 2, 9}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(3, 3)}, {8, 4, 4})};
  for (const TilePlan& plan : plans) {
    const Tensor weights = plan.masks_complementary ? Tensor{} : dense_blend_weights(plan);
    INFO((weights.defined() ? "dense" : "complementary"));
    const int64_t F = plan.out_extent[0];
    std::vector<DecodedTile> tiles = random_tiles(plan, 1.2f, 40);
    std::vector<DecodedTile> ordered;
    for (int64_t t : assembly_order(static_cast<int64_t>(tiles.size()), 3)) ordered.push_back(tiles[t]);
    for (const auto& [start, stop] : std::vector<std::pair<int64_t, int64_t>>{{0, F}, {3, F - 2}}) {
      const Tensor got = assemble_frames(plan, ordered, start, stop, weights);
      REQUIRE(test::max_abs_diff(got, tensor_op_assembly(plan, ordered, start, stop, weights)) == 0.f);
      // bf16 tiles are read as their float32 values.
      std::vector<DecodedTile> half = ordered;
      for (DecodedTile& d : half) d.pixels = d.pixels.to(DType::BF16);
      std::vector<DecodedTile> widened = half;
      for (DecodedTile& d : widened) d.pixels = d.pixels.to(DType::F32);
      REQUIRE(test::max_abs_diff(assemble_frames(plan, half, start, stop, weights),
                                 assemble_frames(plan, widened, start, stop, weights)) == 0.f);
      // Decoded tiles: mapped to [0, 1] per tile, then blended; the 8-bit frames truncate that blend.
      std::vector<DecodedTile> unit = ordered;
      for (DecodedTile& d : unit) {
        d.pixels = d.pixels.clone();
        float* p = d.pixels.data<float>();
        for (int64_t i = 0; i < d.pixels.numel(); ++i) p[i] = ops::from_vae_range(p[i]);
      }
      const Tensor blended = assemble_frames(plan, unit, start, stop, weights);
      REQUIRE(test::max_abs_diff(assemble_frames(plan, ordered, start, stop, weights, TileValues::Decoded),
                                 blended) == 0.f);
      const Tensor rgb8 = assemble_frames_rgb8(plan, ordered, start, stop, weights, TileValues::Decoded);
      REQUIRE(rgb8.dtype() == DType::U8);
      REQUIRE(rgb8.shape() == blended.shape());
      const std::vector<float> bytes = rgb8.to_vector(), values = blended.to_vector();
      size_t mismatches = 0;
      for (size_t i = 0; i < values.size(); ++i) mismatches += bytes[i] != ops::unit_to_u8(values[i]);
      REQUIRE(mismatches == 0);
    }
  }
}

TEST_CASE("vae: causal temporal tiles give the primed frame weight 0 and complementary masks") {
  TilePlan plan = plan_vae_tiles(
      {4, 2, 6}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling::by_count(2, 2)}, {8, 4, 4});
  REQUIRE(plan.out_extent == GridExtent{25, 8, 24});
  REQUIRE(plan.tiles.size() == 4);
  const tiling::Tile& later = plan.tiles[2];
  REQUIRE(later.in[0].start == 1);
  REQUIRE(later.out[0].start == 8);
  REQUIRE(later.masks[0][0] == 0.f);
  REQUIRE(plan.masks_complementary);
  Tensor video = assemble_all(plan, constant_tiles(plan, 0.75f), 3);
  REQUIRE(video.shape() == Shape{25, 8, 24, 3});
  REQUIRE(test::max_abs_diff(video, Tensor::full(video.shape(), 0.75f)) < 1e-6f);
}

TEST_CASE("vae: tiles shorter than their ramps fall back to dense normalisation") {
  // Latent width 9 in 3 tiles with overlap 3: the middle tile (5) is shorter than its ramps (3+3).
  TilePlan plan =
      plan_vae_tiles({1, 2, 9}, {AxisTiling{}, AxisTiling{}, AxisTiling::by_count(3, 3)}, {8, 2, 2});
  REQUIRE_FALSE(plan.masks_complementary);
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
  TilePlan plan =
      plan_vae_tiles({3, 2, 2}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling{}}, {8, 4, 4});
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
