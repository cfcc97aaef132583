// Noise generator: Philox known answers, determinism, slice independence, N(0, 1) statistics,
// and the latent noiser.
#include <cmath>

#include "ops/elementwise.h"
#include "pipeline/noise.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using pipeline::NoiseGenerator;

TEST_CASE("noise: Philox4x32-10 matches the Random123 known answers") {
  REQUIRE(pipeline::philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
          std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  REQUIRE(pipeline::philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                  {0xffffffffu, 0xffffffffu}) ==
          std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
}

TEST_CASE("noise: the same (seed, tensor) gives the same values, another seed or tensor differs") {
  const NoiseGenerator a(10), b(10), c(11);
  const Tensor x = a.normal(3, {2, 5, 7});
  REQUIRE(x.shape() == Shape{2, 5, 7});
  REQUIRE(test::max_abs_diff(x, b.normal(3, {2, 5, 7})) == 0.0f);
  REQUIRE(test::max_abs_diff(x, c.normal(3, {2, 5, 7})) > 0.1f);
  REQUIRE(test::max_abs_diff(x, a.normal(4, {2, 5, 7})) > 0.1f);
  // Seeds differing only in the high word are different keys.
  REQUIRE(test::max_abs_diff(NoiseGenerator(1).normal(0, {64}),
                             NoiseGenerator(1 | (1ull << 32)).normal(0, {64})) > 0.1f);
}

TEST_CASE("noise: any sub-range equals the same slice of the full draw") {
  const NoiseGenerator g(1234);
  const Tensor full = g.normal(7, {1000});
  for (auto [first, count] :
       {std::pair<int64_t, int64_t>{0, 1}, {1, 3}, {3, 2}, {5, 10}, {399, 601}, {997, 3}}) {
    const Tensor part = g.normal_range(7, first, count);
    REQUIRE(test::max_abs_diff(part, full.slice(0, first, first + count).contiguous()) == 0.0f);
  }
  // A shape is only a view of the element order: [10, 100] is the same draw as [1000].
  REQUIRE(test::max_abs_diff(g.normal(7, {10, 100}).reshape({1000}), full) == 0.0f);
}

TEST_CASE("noise: values are standard normal") {
  const int64_t n = 1 << 18;
  const std::vector<float> v = NoiseGenerator(42).normal(0, {n}).to_vector();
  double sum = 0, sq = 0, cube = 0, fourth = 0;
  int64_t within_one = 0, non_finite = 0;
  for (float x : v) {
    non_finite += !std::isfinite(x);
    sum += x;
    sq += double(x) * x;
    cube += double(x) * x * x;
    fourth += double(x) * x * x * x;
    within_one += std::fabs(x) < 1.0f;
  }
  REQUIRE(non_finite == 0);
  const double mean = sum / n, var = sq / n - mean * mean;
  REQUIRE(std::fabs(mean) < 0.01);
  REQUIRE(std::fabs(var - 1.0) < 0.01);
  REQUIRE(std::fabs(cube / n) < 0.03);          // skewness 0
  REQUIRE(std::fabs(fourth / n - 3.0) < 0.05);  // kurtosis 3
  REQUIRE(std::fabs(double(within_one) / n - 0.682689) < 0.005);
  // Neighbouring elements (same Box-Muller pair and across blocks) are uncorrelated.
  double lag1 = 0, lag4 = 0;
  for (int64_t i = 0; i + 4 < n; ++i) {
    lag1 += double(v[i]) * v[i + 1];
    lag4 += double(v[i]) * v[i + 4];
  }
  REQUIRE(std::fabs(lag1 / n) < 0.01);
  REQUIRE(std::fabs(lag4 / n) < 0.01);
}

TEST_CASE("noise: the noiser mixes toward noise by the scale and keeps masked-out tokens clean") {
  const Tensor latent = test::random_tensor({1, 4, 3}, 1), clean = test::random_tensor({1, 4, 3}, 2);
  const Tensor noise = NoiseGenerator(5).normal(0, {1, 4, 3});
  const Tensor mask = Tensor::from_vector({1, 0, 1, 0.5f}, {1, 4, 1});
  const Tensor out = pipeline::noise_latent(latent, clean, mask, noise, 0.25f);
  for (int t = 0; t < 4; ++t)
    for (int c = 0; c < 3; ++c) {
      const float noised = 0.75f * latent.item({0, t, c}) + 0.25f * noise.item({0, t, c});
      const float m = mask.item({0, t, 0});
      REQUIRE(std::fabs(out.item({0, t, c}) - (m * noised + (1 - m) * clean.item({0, t, c}))) < 1e-6f);
    }
}
