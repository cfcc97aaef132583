// Depth-to-space / patchify channel orders (they differ: W offset fastest vs H offset fastest),
// and PixelNorm / GroupNorm against naive loops.
#include <cmath>

#include "models/video_vae/patchify.h"
#include "ops/channel_norm.h"
#include "ops/pixel_shuffle.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("depth_to_space: channel c*P + i*(sH*sW) + j*sW + k lands at (d*sD+i, h*sH+j, w*sW+k)") {
  Tensor x = test::random_tensor({2, 3 * 8, 2, 3, 2}, 1);
  Tensor y = ops::depth_to_space(x, {2, 2, 2});
  REQUIRE(y.shape() == Shape{2, 3, 4, 6, 4});
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 2; ++k)
          REQUIRE(y.item({1, c, 1 * 2 + i, 2 * 2 + j, 1 * 2 + k}) ==
                  x.item({1, c * 8 + i * 4 + j * 2 + k, 1, 2, 1}));
  REQUIRE(test::max_abs_diff(ops::space_to_depth(y, {2, 2, 2}), x) == 0.f);
}

TEST_CASE("unpatchify: channel c*p*p + w_off*p + h_off, patchify is its inverse") {
  const int64_t p = 4;
  Tensor x = test::random_tensor({1, 3 * p * p, 2, 2, 3}, 2);
  Tensor y = video_vae::unpatchify(x, p);
  REQUIRE(y.shape() == Shape{1, 3, 2, 8, 12});
  for (int64_t q = 0; q < p; ++q)    // H offset
    for (int64_t r = 0; r < p; ++r)  // W offset
      REQUIRE(y.item({0, 2, 1, 1 * p + q, 2 * p + r}) == x.item({0, 2 * p * p + r * p + q, 1, 1, 2}));
  REQUIRE(test::max_abs_diff(video_vae::patchify(y, p), x) == 0.f);
}

TEST_CASE("pixel_norm and group_norm match naive loops") {
  Tensor x = test::random_tensor({2, 8, 3, 5, 7}, 3);
  const int64_t B = 2, C = 8, N = 3 * 5 * 7;
  const std::vector<float> xv = x.to_vector();
  Tensor pn = ops::pixel_norm(x, 1e-8f);
  double worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      double ss = 0;
      for (int64_t c = 0; c < C; ++c) ss += double(xv[(b * C + c) * N + n]) * xv[(b * C + c) * N + n];
      const double inv = 1.0 / std::sqrt(ss / C + 1e-8);
      for (int64_t c = 0; c < C; ++c)
        worst =
            std::max(worst, std::fabs(xv[(b * C + c) * N + n] * inv - pn.to_vector()[(b * C + c) * N + n]));
    }
  REQUIRE(worst < 1e-5);

  Tensor w = test::random_tensor({C}, 4), bias = test::random_tensor({C}, 5);
  Tensor gn = ops::group_norm(x, 4, w, bias, 1e-5f);
  const std::vector<float> gv = gn.to_vector();
  worst = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t g = 0; g < 4; ++g) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < 2 * N; ++i) sum += xv[(b * C + g * 2) * N + i];
      const double mean = sum / (2 * N);
      for (int64_t i = 0; i < 2 * N; ++i) sq += std::pow(xv[(b * C + g * 2) * N + i] - mean, 2);
      const double inv = 1.0 / std::sqrt(sq / (2 * N) + 1e-5);
      for (int64_t i = 0; i < 2 * N; ++i) {
        const int64_t c = g * 2 + i / N, at = (b * C + g * 2) * N + i;
        worst = std::max(worst, std::fabs((xv[at] - mean) * inv * w.item({c}) + bias.item({c}) - gv[at]));
      }
    }
  REQUIRE(worst < 1e-5);
  REQUIRE_THROWS(ops::group_norm(x, 3, w, bias, 1e-5f));
}
