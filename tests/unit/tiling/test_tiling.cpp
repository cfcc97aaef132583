// The one tiling module: axis splits by size and by count (and causal), the trapezoid masks in
// both of the reference's formulations, the tile plan's mapping to output cells, and round-robin
// assignment, including the edge cases the fixtures do not reach.
#include "core/error.h"
#include "support/catch.h"
#include "support/error_text.h"
#include "tiling/tile_plan.h"

using namespace ltx2;
using namespace ltx2::tiling;

TEST_CASE("tiling: split by size and the causal split") {
  auto s = split_axis(7, AxisTiling::by_size(3, 1));
  REQUIRE(s == std::vector<Interval>{{0, 3, 0, 1}, {2, 5, 1, 1}, {4, 7, 1, 0}});
  REQUIRE(split_axis(3, AxisTiling::by_size(3, 1)).size() == 1);
  auto t = split_axis(4, AxisTiling::by_size(3, 1), true);
  REQUIRE(t == std::vector<Interval>{{0, 3, 0, 1}, {1, 4, 2, 0}});
  REQUIRE_FALSE(AxisTiling::by_size(0, 8).is_tiled());
  REQUIRE(split_axis(5, AxisTiling{}) == std::vector<Interval>{{0, 5, 0, 0}});
}

TEST_CASE("tiling: a split by size with a smallest tile grows a short last tile leftward") {
  // 9 cells by 4 with overlap 1: [0, 4), [3, 7), [6, 9); a smallest tile of 4 grows the last to
  // [5, 9), its left ramp and its neighbour's right ramp covering the overlap of 2.
  REQUIRE(split_axis(9, AxisTiling::by_size(4, 1)) ==
          std::vector<Interval>{{0, 4, 0, 1}, {3, 7, 1, 1}, {6, 9, 1, 0}});
  REQUIRE(split_axis(9, AxisTiling::by_size(4, 1, 4)) ==
          std::vector<Interval>{{0, 4, 0, 1}, {3, 7, 1, 2}, {5, 9, 2, 0}});
  REQUIRE(split_axis(9, AxisTiling::by_size(4, 1, 3)) == split_axis(9, AxisTiling::by_size(4, 1)));
  // An axis shorter than the smallest tile stays whole.
  REQUIRE(split_axis(5, AxisTiling::by_size(2, 0, 6)) == std::vector<Interval>{{0, 5, 0, 0}});
}

TEST_CASE(
    "tiling: by count, neighbours share exactly the overlap, the last ends at the axis end, masks sum to 1") {
  for (int64_t length = 2; length <= 40; ++length)
    for (int64_t n = 2; n <= 6 && n <= length; ++n)
      for (int64_t o = 0; o <= 5; ++o) {
        if ((length + o * (n - 1)) / n <= o) continue;  // tiles no longer than the overlap are refused
        auto tiles = split_axis(length, AxisTiling::by_count(n, o));
        REQUIRE(tiles.size() == static_cast<size_t>(n));
        REQUIRE(tiles.front().start == 0);
        REQUIRE(tiles.back().stop == length);
        std::vector<float> sum(static_cast<size_t>(length), 0.f);
        bool ramps_fit = true;
        for (size_t i = 0; i < tiles.size(); ++i) {
          if (i > 0) REQUIRE(tiles[i - 1].stop - tiles[i].start == o);
          ramps_fit = ramps_fit && tiles[i].length() >= tiles[i].left_ramp + tiles[i].right_ramp;
          auto m = trapezoid_mask(tiles[i].length(), tiles[i].left_ramp, tiles[i].right_ramp, false,
                                  RampValues::Fractions);
          for (int64_t j = 0; j < tiles[i].length(); ++j) sum[tiles[i].start + j] += m[j];
        }
        if (ramps_fit)
          for (float v : sum) REQUIRE(v == Approx(1.f).margin(1e-6));
      }
}

TEST_CASE("tiling: one tile ignores the overlap, too many tiles or too much overlap are refused") {
  REQUIRE(split_axis(7, AxisTiling::by_count(1, 3)) == std::vector<Interval>{{0, 7, 0, 0}});
  REQUIRE(test::contains(test::error_text([&] { split_axis(3, AxisTiling::by_count(4, 0)); }),
                         "4 tiles do not fit"));
  REQUIRE(
      test::contains(test::error_text([&] { split_axis(4, AxisTiling::by_count(2, 4)); }), "cannot overlap"));
  REQUIRE(test::contains(test::error_text([&] { split_axis(4, AxisTiling::by_size(2, 2)); }),
                         "size 2 overlap 2"));
  auto causal = split_axis(4, AxisTiling::by_count(2, 1), true);
  REQUIRE(causal[1].start == 1);
  REQUIRE(causal[1].left_ramp == 2);
}

TEST_CASE("tiling: masks in both formulations, from zero when asked, clamped to the length") {
  for (RampValues v : {RampValues::Linspace, RampValues::Fractions}) {
    REQUIRE(trapezoid_mask(5, 2, 0, true, v) == std::vector<float>{0.f, 0.5f, 1.f, 1.f, 1.f});
    auto m = trapezoid_mask(5, 1, 2, false, v);
    REQUIRE(m[0] == Approx(0.5));
    REQUIRE(m[2] == 1.f);
    REQUIRE(m[3] == Approx(2.0 / 3));
    REQUIRE(m[4] == Approx(1.0 / 3));
  }
  auto clamped = trapezoid_mask(2, 9, 0, false, RampValues::Fractions);
  REQUIRE(clamped[0] == Approx(1.f / 3.f));
  REQUIRE(clamped[1] == Approx(2.f / 3.f));
  // The two formulations round differently: linspace steps from the nearer end.
  const auto lin = trapezoid_mask(9, 7, 0, false, RampValues::Linspace);
  const auto frac = trapezoid_mask(9, 7, 0, false, RampValues::Fractions);
  for (size_t j = 0; j < lin.size(); ++j) REQUIRE(lin[j] == Approx(frac[j]).margin(1e-7));
}

TEST_CASE("tiling: balanced split, product order, causal pixel mapping and round-robin assignment") {
  REQUIRE(balanced_tile_split(1) == std::pair<int64_t, int64_t>{1, 1});
  REQUIRE(balanced_tile_split(6) == std::pair<int64_t, int64_t>{2, 3});
  REQUIRE(balanced_tile_split(7) == std::pair<int64_t, int64_t>{1, 7});
  REQUIRE(balanced_tile_split(12) == std::pair<int64_t, int64_t>{3, 4});
  const TilePlan same =
      plan_tiles({2, 4, 6}, {AxisTiling{}, AxisTiling::by_count(2, 0), AxisTiling::by_count(3, 0)}, {});
  REQUIRE(same.tiles.size() == 6);
  REQUIRE(same.tiles[1].in[2].start == 2);  // width fastest
  REQUIRE(same.tiles[3].in[1].start == 2);
  REQUIRE(same.out_extent == GridExtent{2, 4, 6});
  REQUIRE(same.tiles[3].out[1].start == 2);
  REQUIRE(same.temporal_groups == 1);

  // The video VAE's mapping: latent frames 0..3 -> pixel frames 0..24, the later tile starting one
  // latent frame early with a ramp from zero.
  const TilePlan vae =
      plan_tiles({4, 2, 3}, {AxisTiling::by_count(2, 1), AxisTiling{}, AxisTiling::by_count(2, 1)},
                 {{8, 4, 4}, true, RampValues::Fractions});
  REQUIRE(vae.out_extent == GridExtent{25, 8, 12});
  REQUIRE(vae.temporal_groups == 2);
  REQUIRE(vae.tiles[2].in[0].start == 1);
  REQUIRE(vae.tiles[2].out[0].start == 8);
  REQUIRE(vae.tiles[2].masks[0][0] == 0.f);
  REQUIRE(vae.tiles[2].temporal_group == 1);
  REQUIRE(vae.masks_complementary);
  REQUIRE(tiles_for_rank(6, 1, 4) == std::vector<int64_t>{1, 5});
  REQUIRE(tiles_for_rank(2, 3, 4).empty());
}
