// The decoded video -> 8-bit RGB op on the CPU: the reference's mapping value by value (add 1,
// halve, clamp, * 255, truncate; NaN -> 0), the [3, F, H, W] -> [F, H, W, 3] layout, bf16 input.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/rgb8.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("decoded_to_rgb8: maps [-1, 1] to 0..255 as the reference does, truncating and clamping") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // (x + 1) * 0.5 * 255: -1 -> 0, 0 -> 127.5 -> 127, 1 -> 255; just below a code stays below it.
  const std::vector<std::pair<float, int>> cases = {
      {-1.f, 0},
      {1.f, 255},
      {0.f, 127},
      {-2.f, 0},
      {1.5f, 255},
      {nan, 0},
      {inf, 255},
      {-inf, 0},
      {0.5f, 191},            // 0.75 * 255 = 191.25
      {1.f - 0x1p-22f, 254},  // (x + 1) / 2 just below 1: 254.99997 truncates
  };
  std::vector<float> values;
  for (const auto& [x, u] : cases) values.push_back(x);
  // One frame of 1 x n pixels whose three channels all hold the same value.
  const auto n = static_cast<int64_t>(values.size());
  std::vector<float> planes;
  for (int c = 0; c < 3; ++c) planes.insert(planes.end(), values.begin(), values.end());
  const Tensor out = ops::decoded_to_rgb8(Tensor::from_vector(planes, {3, 1, 1, n}));
  REQUIRE(out.dtype() == DType::U8);
  REQUIRE(out.shape() == Shape{1, 1, n, 3});
  const uint8_t* p = out.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    INFO("x = " << values[i]);
    for (int c = 0; c < 3; ++c) CHECK(int(p[3 * i + c]) == cases[i].second);
  }
  // The scalar rule, as the reference's float32 steps.
  for (float x : {-0.3f, 0.1f, 0.77f}) {
    const float unit = std::clamp((x + 1.f) / 2.f, 0.f, 1.f);
    CHECK(int(ops::unit_to_u8(ops::from_vae_range(x))) == int(static_cast<uint8_t>(unit * 255.f)));
  }
}

TEST_CASE("decoded_to_rgb8: channel planes become interleaved frames, bf16 reads as its float32 value") {
  const Tensor x = test::random_tensor({3, 2, 3, 5}, 11);
  const Tensor out = ops::decoded_to_rgb8(x);
  REQUIRE(out.shape() == Shape{2, 3, 5, 3});
  for (int64_t f = 0; f < 2; ++f)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 5; ++w)
        for (int64_t c = 0; c < 3; ++c)
          REQUIRE(out.item({f, h, w, c}) == ops::unit_to_u8(ops::from_vae_range(x.item({c, f, h, w}))));
  const Tensor b = x.to(DType::BF16);
  REQUIRE(test::max_abs_diff(ops::decoded_to_rgb8(b), ops::decoded_to_rgb8(b.to(DType::F32))) == 0.f);
  // A strided sample (batch 1 of [2, 3, F, H, W]) reads like its contiguous copy.
  const Tensor batch = test::random_tensor({2, 3, 2, 3, 5}, 12);
  REQUIRE(test::max_abs_diff(ops::decoded_to_rgb8(batch.select(0, 1)),
                             ops::decoded_to_rgb8(batch.select(0, 1).contiguous())) == 0.f);
  REQUIRE_THROWS_WITH(ops::decoded_to_rgb8(Tensor::zeros({4, 1, 2, 2})),
                      Catch::Matchers::Contains("[3, F, H, W]"));
}
