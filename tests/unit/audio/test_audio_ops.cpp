// The audio ops (1-D / transposed 1-D / 2-D convolution, filtered resampling, Snake-Beta, nearest
// upsampling) against naive double-precision loops written out here.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/conv1d.h"
#include "ops/conv2d.h"
#include "ops/conv_transpose1d.h"
#include "ops/resample1d.h"
#include "ops/snake.h"
#include "ops/upsample_nearest.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

// Zero outside [0, n).
double at(const std::vector<float>& row, int64_t i) {
  return i < 0 || i >= static_cast<int64_t>(row.size()) ? 0.0 : row[i];
}

std::vector<float> row_of(const Tensor& x, int64_t b, int64_t c) {
  std::vector<float> r(x.size(2));
  for (int64_t t = 0; t < x.size(2); ++t) r[t] = x.item({b, c, t});
  return r;
}

// Edge samples repeated outside [0, n).
double clamped(const std::vector<float>& row, int64_t i) {
  int64_t n = static_cast<int64_t>(row.size());
  return row[std::min(std::max<int64_t>(i, 0), n - 1)];
}

}  // namespace

TEST_CASE("audio ops: conv1d matches a naive loop (stride, dilation, padding, groups, bias)") {
  struct Case {
    int64_t cin, cout, k, L;
    ops::Conv1dOptions opt;
  };
  std::vector<Case> cases = {
      {6, 4, 3, 17, {1, 1, 1, 1, 1}},  // 'same'
      {6, 4, 5, 23, {2, 3, 1, 1, 1}},  // strided, asymmetric padding
      {6, 4, 3, 19, {1, 5, 5, 5, 1}},  // dilated
      {6, 4, 4, 16, {3, 0, 2, 1, 2}},  // grouped
      {1, 6, 8, 40, {4, 4, 0, 1, 1}},  // STFT-like
  };
  uint64_t seed = 10;
  for (const Case& c : cases) {
    Tensor x = test::random_tensor({2, c.cin, c.L}, seed++);
    Tensor w = test::random_tensor({c.cout, c.cin / c.opt.groups, c.k}, seed++);
    Tensor b = test::random_tensor({c.cout}, seed++);
    Tensor y = ops::conv1d(x, w, b, c.opt);
    const int64_t Lout =
        (c.L + c.opt.pad_left + c.opt.pad_right - c.opt.dilation * (c.k - 1) - 1) / c.opt.stride + 1;
    REQUIRE(y.shape() == Shape{2, c.cout, Lout});
    double worst = 0;
    const int64_t cg = c.cin / c.opt.groups, og = c.cout / c.opt.groups;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t t = 0; t < Lout; ++t) {
          double s = b.item({o});
          for (int64_t i = 0; i < cg; ++i) {
            auto row = row_of(x, n, (o / og) * cg + i);
            for (int64_t k = 0; k < c.k; ++k)
              s += w.item({o, i, k}) * at(row, t * c.opt.stride + k * c.opt.dilation - c.opt.pad_left);
          }
          worst = std::max(worst, std::fabs(s - y.item({n, o, t})));
        }
    REQUIRE(worst < 1e-5);
  }
  REQUIRE(
      ops::conv1d(test::random_tensor({1, 2, 9}, 1), test::random_tensor({3, 2, 3}, 2), Tensor()).shape() ==
      Shape{1, 3, 7});
  REQUIRE_THROWS_AS(
      ops::conv1d(test::random_tensor({1, 2, 9}, 1), test::random_tensor({3, 4, 3}, 2), Tensor()), Error);
}

TEST_CASE("audio ops: conv_transpose1d matches a naive scatter loop") {
  struct Case {
    int64_t cin, cout, k, L;
    ops::ConvTranspose1dOptions opt;
  };
  std::vector<Case> cases = {
      {4, 3, 16, 9, {6, 5, 1}},   // vocoder ups.0: length exactly 6 L
      {4, 3, 15, 7, {5, 5, 1}},   // odd kernel
      {4, 6, 4, 11, {2, 1, 2}},   // grouped
      {3, 3, 12, 10, {2, 0, 3}},  // depthwise, no padding
  };
  uint64_t seed = 40;
  for (const Case& c : cases) {
    Tensor x = test::random_tensor({2, c.cin, c.L}, seed++);
    Tensor w = test::random_tensor({c.cin, c.cout / c.opt.groups, c.k}, seed++);
    Tensor b = test::random_tensor({c.cout}, seed++);
    Tensor y = ops::conv_transpose1d(x, w, b, c.opt);
    const int64_t Lout = (c.L - 1) * c.opt.stride + c.k - 2 * c.opt.padding;
    REQUIRE(y.shape() == Shape{2, c.cout, Lout});
    std::vector<double> ref(2 * c.cout * Lout);
    const int64_t ig = c.cin / c.opt.groups, og = c.cout / c.opt.groups;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t t = 0; t < Lout; ++t) ref[(n * c.cout + o) * Lout + t] = b.item({o});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t i = 0; i < c.cin; ++i)
        for (int64_t ol = 0; ol < og; ++ol)
          for (int64_t t = 0; t < c.L; ++t)
            for (int64_t k = 0; k < c.k; ++k) {
              int64_t j = t * c.opt.stride + k - c.opt.padding, o = (i / ig) * og + ol;
              if (j >= 0 && j < Lout)
                ref[(n * c.cout + o) * Lout + j] += double(x.item({n, i, t})) * w.item({i, ol, k});
            }
    double worst = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t t = 0; t < Lout; ++t)
          worst = std::max(worst, std::fabs(ref[(n * c.cout + o) * Lout + t] - y.item({n, o, t})));
    REQUIRE(worst < 1e-5);
  }
}

TEST_CASE("audio ops: conv2d with one-sided padding matches a naive loop") {
  struct Case {
    int64_t cin, cout, k, H, W;
    ops::Conv2dPadding pad;
  };
  std::vector<Case> cases = {
      {3, 5, 3, 7, 6, {2, 0, 1, 1}},  // causal in time (height)
      {3, 5, 3, 6, 7, {1, 1, 2, 0}},  // causal in width
      {4, 2, 1, 5, 4, {0, 0, 0, 0}},  // 1x1 shortcut
  };
  uint64_t seed = 70;
  for (const Case& c : cases) {
    Tensor x = test::random_tensor({2, c.cin, c.H, c.W}, seed++);
    Tensor w = test::random_tensor({c.cout, c.cin, c.k, c.k}, seed++);
    Tensor b = test::random_tensor({c.cout}, seed++);
    Tensor y = ops::conv2d(x, w, b, c.pad);
    const int64_t Ho = c.H + c.pad.top + c.pad.bottom - c.k + 1,
                  Wo = c.W + c.pad.left + c.pad.right - c.k + 1;
    REQUIRE(y.shape() == Shape{2, c.cout, Ho, Wo});
    double worst = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < c.cout; ++o)
        for (int64_t h = 0; h < Ho; ++h)
          for (int64_t v = 0; v < Wo; ++v) {
            double s = b.item({o});
            for (int64_t i = 0; i < c.cin; ++i)
              for (int64_t p = 0; p < c.k; ++p)
                for (int64_t q = 0; q < c.k; ++q) {
                  int64_t hh = h + p - c.pad.top, ww = v + q - c.pad.left;
                  if (hh >= 0 && hh < c.H && ww >= 0 && ww < c.W)
                    s += double(w.item({o, i, p, q})) * x.item({n, i, hh, ww});
                }
            worst = std::max(worst, std::fabs(s - y.item({n, o, h, v})));
          }
    REQUIRE(worst < 1e-5);
  }
  REQUIRE_THROWS_AS(
      ops::conv2d(test::random_tensor({1, 2, 4, 4}, 1), test::random_tensor({3, 3, 3, 3}, 2), Tensor()),
      Error);
}

TEST_CASE("audio ops: filtered up- and downsampling match naive loops with replicated edges") {
  Tensor x = test::random_tensor({2, 3, 13}, 90);
  Tensor h = test::random_tensor({12}, 91);
  const int64_t ratio = 2, pad = 5, crop_l = 15, crop_r = 15;
  Tensor up = ops::upsample1d(x, h, ratio, pad, crop_l, crop_r);
  REQUIRE(up.shape() == Shape{2, 3, 26});
  Tensor down = ops::lowpass_downsample1d(x, h, 2, 5, 6);
  REQUIRE(down.shape() == Shape{2, 3, 7});
  double worst_up = 0, worst_down = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c) {
      auto row = row_of(x, n, c);
      const int64_t Lp = 13 + 2 * pad, full = (Lp - 1) * ratio + 12;
      std::vector<double> acc(full, 0.0);
      for (int64_t t = 0; t < Lp; ++t)
        for (int64_t k = 0; k < 12; ++k) acc[t * ratio + k] += clamped(row, t - pad) * h.item({k});
      for (int64_t t = 0; t < 26; ++t)
        worst_up = std::max(worst_up, std::fabs(ratio * acc[crop_l + t] - up.item({n, c, t})));
      for (int64_t t = 0; t < 7; ++t) {
        double s = 0;
        for (int64_t k = 0; k < 12; ++k) s += clamped(row, t * 2 + k - 5) * h.item({k});
        worst_down = std::max(worst_down, std::fabs(s - down.item({n, c, t})));
      }
    }
  REQUIRE(worst_up < 1e-5);
  REQUIRE(worst_down < 1e-5);
}

TEST_CASE("audio ops: snake-beta and nearest upsampling follow their formulas") {
  Tensor x = test::random_tensor({2, 3, 5}, 100);
  Tensor la = test::random_tensor({3}, 101), lb = test::random_tensor({3}, 102);
  Tensor y = ops::snake_beta(x, la, lb);
  double worst = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t t = 0; t < 5; ++t) {
        double v = x.item({n, c, t}), a = std::exp(double(la.item({c}))), b = std::exp(double(lb.item({c})));
        double s = std::sin(a * v);
        worst = std::max(worst, std::fabs(v + s * s / (b + 1e-9) - y.item({n, c, t})));
      }
  REQUIRE(worst < 1e-5);
  REQUIRE_THROWS_AS(ops::snake_beta(x, test::random_tensor({2}, 1), lb), Error);

  Tensor img = test::random_tensor({1, 2, 3, 4}, 103);
  Tensor big = ops::upsample_nearest2d(img, 2);
  REQUIRE(big.shape() == Shape{1, 2, 6, 8});
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t w = 0; w < 8; ++w) REQUIRE(big.item({0, c, h, w}) == img.item({0, c, h / 2, w / 2}));
}
