// Axis splitting, blend ramps and the balanced factorisation, including the edge cases the
// fixtures do not reach.
#include "core/error.h"
#include "error_text.h"
#include "parallel/tile_plan.h"
#include "parallel/tile_split.h"
#include "support/catch.h"

using namespace ltx2;
using namespace ltx2::parallel;

TEST_CASE("tiles: neighbours share exactly the overlap, the last ends at the axis end, masks sum to 1") {
  for (int64_t length = 2; length <= 40; ++length)
    for (int64_t n = 2; n <= 6 && n <= length; ++n)
      for (int64_t o = 0; o <= 5; ++o) {
        if ((length + o * (n - 1)) / n <= o) continue;  // tiles no longer than the overlap are refused
        auto tiles = split_by_count(length, {n, o});
        REQUIRE(tiles.size() == static_cast<size_t>(n));
        REQUIRE(tiles.front().start == 0);
        REQUIRE(tiles.back().stop == length);
        std::vector<float> sum(static_cast<size_t>(length), 0.f);
        bool ramps_fit = true;
        for (size_t i = 0; i < tiles.size(); ++i) {
          if (i > 0) REQUIRE(tiles[i - 1].stop - tiles[i].start == o);
          ramps_fit = ramps_fit && tiles[i].length() >= tiles[i].left_ramp + tiles[i].right_ramp;
          auto m = trapezoidal_mask_1d(tiles[i].length(), tiles[i].left_ramp, tiles[i].right_ramp);
          for (int64_t j = 0; j < tiles[i].length(); ++j) sum[tiles[i].start + j] += m[j];
        }
        if (ramps_fit)
          for (float v : sum) REQUIRE(v == Approx(1.f).margin(1e-6));
      }
}

TEST_CASE("tiles: one tile ignores the overlap, too many tiles or too much overlap are refused") {
  auto one = split_by_count(7, {1, 3});
  REQUIRE(one.size() == 1);
  REQUIRE(one[0].start == 0);
  REQUIRE(one[0].stop == 7);
  REQUIRE(one[0].left_ramp == 0);
  REQUIRE(one[0].right_ramp == 0);
  REQUIRE(test::contains(test::error_text([&] { split_by_count(3, {4, 0}); }), "4 tiles do not fit"));
  REQUIRE(test::contains(test::error_text([&] { split_by_count(4, {2, 4}); }), "cannot overlap"));
  auto causal = split_by_count_causal(4, {2, 1});
  REQUIRE(causal[1].start == 1);
  REQUIRE(causal[1].left_ramp == 2);
}

TEST_CASE("tiles: ramps start from zero when asked, and are clamped to the length") {
  auto m = trapezoidal_mask_1d(5, 2, 0, true);
  REQUIRE(m == std::vector<float>{0.f, 0.5f, 1.f, 1.f, 1.f});
  auto clamped = trapezoidal_mask_1d(2, 9, 0);
  REQUIRE(clamped[0] == Approx(1.f / 3.f));
  REQUIRE(clamped[1] == Approx(2.f / 3.f));
}

TEST_CASE("tiles: balanced split, product order and round-robin assignment") {
  REQUIRE(balanced_tile_split(1) == std::pair<int64_t, int64_t>{1, 1});
  REQUIRE(balanced_tile_split(6) == std::pair<int64_t, int64_t>{2, 3});
  REQUIRE(balanced_tile_split(7) == std::pair<int64_t, int64_t>{1, 7});
  REQUIRE(balanced_tile_split(12) == std::pair<int64_t, int64_t>{3, 4});
  auto boxes = tile_boxes({2, 4, 6}, {AxisTiling{}, AxisTiling{2, 0}, AxisTiling{3, 0}}, false);
  REQUIRE(boxes.size() == 6);
  REQUIRE(boxes[1][2].start == 2);  // width fastest
  REQUIRE(boxes[3][1].start == 2);
  REQUIRE(tiles_for_rank(6, 1, 4) == std::vector<int64_t>{1, 5});
  REQUIRE(tiles_for_rank(2, 3, 4).empty());
}
