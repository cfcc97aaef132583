// RoPE: frequency grids, table layouts and the rotation, on values small enough to check by hand.
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ops/rope.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("rope: frequency grid spans pi/2 .. theta*pi/2 in both precisions") {
  for (auto precision : {ops::RopeGridPrecision::Float32, ops::RopeGridPrecision::Float64}) {
    const Tensor g = ops::rope_frequency_grid(10000.0, 1, 10, precision);  // F = 5
    REQUIRE(g.shape() == Shape{5});
    REQUIRE(g.item({0}) == static_cast<float>(std::numbers::pi / 2));
    REQUIRE(std::fabs(g.item({2}) - static_cast<float>(100 * std::numbers::pi / 2)) < 1e-4f);
    REQUIRE(std::fabs(g.item({4}) / static_cast<float>(10000 * std::numbers::pi / 2) - 1.0f) < 1e-6f);
  }
  REQUIRE_THROWS_WITH(ops::rope_frequency_grid(10000.0, 3, 4, ops::RopeGridPrecision::Float32),
                      Contains("dim 4"));
}

TEST_CASE("rope: split tables pad head 0 and rotate (i, i + hd/2) pairs") {
  // One axis, dim 8, 2 heads: F = 4 frequencies, no padding; head h gets frequencies 2h, 2h+1.
  ops::RopeSpec spec{8, 2, 10000.0, {4.0}, ops::RopeLayout::Split, ops::RopeGridPrecision::Float64};
  const Tensor pos = Tensor::from_vector({1.0f, 2.0f}, {1, 1, 1, 2});  // midpoint 1.5 -> u = -0.25
  const ops::RopeTables t = ops::rope_tables(pos, spec);
  REQUIRE(t.cos.shape() == Shape{1, 2, 1, 2});
  const Tensor grid = ops::rope_frequency_grid(10000.0, 1, 8, ops::RopeGridPrecision::Float64);
  const float angle3 = grid.item({3}) * -0.25f;
  REQUIRE(t.cos.item({0, 1, 0, 1}) == std::cos(angle3));
  REQUIRE(t.sin.item({0, 1, 0, 1}) == std::sin(angle3));

  const Tensor x = test::random_tensor({1, 1, 8}, 7);
  const Tensor y = ops::apply_rope(x, t);
  // head 1, pair (1, 3) of the head = elements 5 and 7 of the row.
  const float c = std::cos(angle3), s = std::sin(angle3);
  REQUIRE(std::fabs(y.item({0, 0, 5}) - (x.item({0, 0, 5}) * c - x.item({0, 0, 7}) * s)) < 1e-6f);
  REQUIRE(std::fabs(y.item({0, 0, 7}) - (x.item({0, 0, 7}) * c + x.item({0, 0, 5}) * s)) < 1e-6f);

  // Three axes, dim 8: F = 1, 3 angles, pad = 1 identity slot first.
  ops::RopeSpec video{
      8, 1, 10000.0, {20, 2048, 2048}, ops::RopeLayout::Split, ops::RopeGridPrecision::Float32};
  const ops::RopeTables v = ops::rope_tables(Tensor::zeros({1, 3, 2, 2}), video);
  REQUIRE(v.cos.item({0, 0, 0, 0}) == 1.0f);
  REQUIRE(v.sin.item({0, 0, 0, 0}) == 0.0f);
  REQUIRE(v.cos.item({0, 0, 0, 1}) == std::cos(static_cast<float>(std::numbers::pi / 2) * -1.0f));
}

TEST_CASE("rope: interleaved tables repeat each angle and rotate (2i, 2i+1)") {
  ops::RopeSpec spec{6, 1, 10000.0, {10.0}, ops::RopeLayout::Interleaved, ops::RopeGridPrecision::Float32};
  const Tensor points = Tensor::from_vector({7.5f}, {1, 1, 1});  // a point, not an interval: u = 0.5
  const ops::RopeTables t = ops::rope_tables(points, spec);
  REQUIRE(t.cos.shape() == Shape{1, 1, 6});
  const Tensor grid = ops::rope_frequency_grid(10000.0, 1, 6, ops::RopeGridPrecision::Float32);
  REQUIRE(t.cos.item({0, 0, 2}) == std::cos(grid.item({1}) * 0.5f));
  REQUIRE(t.cos.item({0, 0, 3}) == t.cos.item({0, 0, 2}));
  const Tensor x = test::random_tensor({1, 1, 6}, 3);
  const Tensor y = ops::apply_rope(x, t);
  const float c = t.cos.item({0, 0, 2}), s = t.sin.item({0, 0, 2});
  REQUIRE(std::fabs(y.item({0, 0, 2}) - (x.item({0, 0, 2}) * c - x.item({0, 0, 3}) * s)) < 1e-6f);
  REQUIRE(std::fabs(y.item({0, 0, 3}) - (x.item({0, 0, 3}) * c + x.item({0, 0, 2}) * s)) < 1e-6f);
  REQUIRE_THROWS_WITH(ops::apply_rope(Tensor::zeros({1, 2, 6}), t), Contains("do not fit"));
}
