// conv3d against a naive double-precision loop, border padding modes, and the causal / non-causal
// temporal padding of CausalConv3d, and the CUDA convolutions' column budget setting.
#include <cmath>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/video_vae/causal_conv.h"
#include "ops/conv3d.h"
#include "ops/edge_pad.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

// y[b, co, d, h, w] = bias[co] + sum x[b, ci, d*s + kd - p, ...] * w[co, ci, kd, kh, kw] (zeros outside).
Tensor naive_conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const ops::Conv3dParams& p) {
  const int64_t B = x.size(0), Ci = x.size(1), Co = w.size(0);
  const int64_t in[3] = {x.size(2), x.size(3), x.size(4)}, k[3] = {w.size(2), w.size(3), w.size(4)};
  int64_t out[3];
  for (int i = 0; i < 3; ++i) out[i] = (in[i] + 2 * p.padding[i] - k[i]) / p.stride[i] + 1;
  Tensor y = Tensor::zeros({B, Co, out[0], out[1], out[2]});
  const std::vector<float> xv = x.to_vector(), wv = w.to_vector();
  std::vector<float> yv(static_cast<size_t>(y.numel()));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t co = 0; co < Co; ++co)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow) {
            double s = bias.defined() ? bias.item({co}) : 0.0;
            for (int64_t ci = 0; ci < Ci; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t c = 0; c < k[1]; ++c)
                  for (int64_t e = 0; e < k[2]; ++e) {
                    const int64_t id = od * p.stride[0] - p.padding[0] + a;
                    const int64_t ih = oh * p.stride[1] - p.padding[1] + c;
                    const int64_t iw = ow * p.stride[2] - p.padding[2] + e;
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    s += double(xv[(((b * Ci + ci) * in[0] + id) * in[1] + ih) * in[2] + iw]) *
                         wv[(((co * Ci + ci) * k[0] + a) * k[1] + c) * k[2] + e];
                  }
            yv[(((b * Co + co) * out[0] + od) * out[1] + oh) * out[2] + ow] = static_cast<float>(s);
          }
  return Tensor::from_vector(yv, y.shape());
}

}  // namespace

TEST_CASE("conv3d: matches a naive loop (padding, strides, odd widths, several row blocks)") {
  struct Case {
    Shape x, w;
    ops::Conv3dParams p;
    bool bias;
  };
  const Case cases[] = {
      {{2, 3, 4, 9, 11}, {5, 3, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1}}, true},   // > 64 positions per frame
      {{1, 4, 3, 6, 7}, {6, 4, 3, 3, 3}, {{1, 1, 1}, {0, 1, 1}}, false},   // Cout a multiple of 4
      {{1, 2, 2, 12, 10}, {3, 2, 1, 5, 5}, {{1, 2, 2}, {0, 2, 2}}, true},  // strided blur shape
      {{1, 3, 5, 4, 4}, {2, 3, 1, 1, 1}, {{2, 1, 1}, {0, 0, 0}}, true},    // 1x1x1, temporal stride
  };
  uint64_t seed = 10;
  for (const Case& c : cases) {
    Tensor x = test::random_tensor(c.x, seed++), w = test::random_tensor(c.w, seed++);
    Tensor b = c.bias ? test::random_tensor({c.w[0]}, seed++) : Tensor();
    Tensor got = ops::conv3d(x, w, b, c.p), want = naive_conv3d(x, w, b, c.p);
    REQUIRE(got.shape() == want.shape());
    REQUIRE(test::max_abs_diff(got, want) < 1e-5f);
  }
}

TEST_CASE("conv3d: refuses mismatched channels and kernels larger than the input") {
  Tensor x = test::random_tensor({1, 3, 2, 4, 4}, 1);
  REQUIRE_THROWS(ops::conv3d(x, test::random_tensor({2, 4, 1, 1, 1}, 2), Tensor()));
  REQUIRE_THROWS(ops::conv3d(x, test::random_tensor({2, 3, 3, 1, 1}, 3), Tensor()));
}

TEST_CASE("edge_pad: reflect excludes the edge, replicate repeats it, circular wraps") {
  Tensor x = Tensor::from_vector({1, 2, 3, 4}, {1, 4});
  REQUIRE(ops::edge_pad(x, 1, 2, 1, ops::PadMode::Reflect).to_vector() ==
          std::vector<float>{3, 2, 1, 2, 3, 4, 3});
  REQUIRE(ops::edge_pad(x, 1, 2, 1, ops::PadMode::Replicate).to_vector() ==
          std::vector<float>{1, 1, 1, 2, 3, 4, 4});
  REQUIRE(ops::edge_pad(x, 1, 2, 1, ops::PadMode::Circular).to_vector() ==
          std::vector<float>{3, 4, 1, 2, 3, 4, 1});
  REQUIRE(ops::edge_pad(x, 1, 1, 1, ops::PadMode::Zeros).to_vector() == std::vector<float>{0, 1, 2, 3, 4, 0});
  REQUIRE_THROWS(ops::edge_pad(x, 1, 4, 0, ops::PadMode::Reflect));
}

TEST_CASE("CausalConv3d: causal sees frames t-2..t, non-causal t-1..t+1 with replicated ends") {
  // A kernel that only reads the centre pixel of temporal tap 0: output frame t = input frame at
  // the first window position, i.e. t-2 (causal) or t-1 (non-causal), clamped into [0, F-1].
  Tensor w = Tensor::zeros({1, 1, 3, 3, 3});
  w.slice(2, 0, 1).slice(3, 1, 2).slice(4, 1, 2).fill_(1.f);
  test::ScratchDir dir("causal_conv");
  write_safetensors(dir.file("w.safetensors"), {{"c.conv.weight", w}, {"c.conv.bias", Tensor::zeros({1})}});
  WeightView view(WeightSet::open({dir.file("w.safetensors")}), {""}, "test conv");
  const int64_t F = 5;
  Tensor x = Tensor::empty({1, 1, F, 2, 2});
  for (int64_t f = 0; f < F; ++f) x.slice(2, f, f + 1).fill_(float(10 * (f + 1)));
  for (SpatialPadding pad : {SpatialPadding::Zeros, SpatialPadding::Reflect}) {
    video_vae::CausalConv3d conv(view, "c", 1, 1, pad);
    Tensor causal = conv.forward(x, true), plain = conv.forward(x, false);
    REQUIRE(causal.shape() == x.shape());
    for (int64_t f = 0; f < F; ++f) {
      REQUIRE(causal.item({0, 0, f, 1, 0}) == float(10 * (std::max<int64_t>(f - 2, 0) + 1)));
      REQUIRE(plain.item({0, 0, f, 0, 1}) == float(10 * (std::max<int64_t>(f - 1, 0) + 1)));
    }
  }
  REQUIRE_THROWS_WITH(video_vae::CausalConv3d(view, "c", 2, 1, SpatialPadding::Zeros),
                      Catch::Matchers::Contains("'c.conv.weight' has shape"));
}

TEST_CASE("conv column budget: set returns the previous value and refuses non-positive sizes") {
  const int64_t initial = ops::conv_column_budget();
  REQUIRE(initial == int64_t{256} << 20);
  REQUIRE(ops::set_conv_column_budget(4096) == initial);
  REQUIRE(ops::conv_column_budget() == 4096);
  REQUIRE_THROWS_AS(ops::set_conv_column_budget(0), Error);
  REQUIRE(ops::conv_column_budget() == 4096);
  REQUIRE(ops::set_conv_column_budget(initial) == 4096);
}
