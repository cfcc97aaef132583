// CPU ops against naive double-precision loops written out here.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/conv3d.h"
#include "ops/elementwise.h"
#include "ops/linear.h"
#include "ops/norm.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("ops: linear matches a naive loop, with and without bias") {
  Tensor x = test::random_tensor({2, 3, 37}, 1), w = test::random_tensor({19, 37}, 2);
  Tensor b = test::random_tensor({19}, 3);
  Tensor y = ops::linear(x, w, b);
  REQUIRE(y.shape() == Shape{2, 3, 19});
  double worst = 0;
  for (int i = 0; i < 2; ++i)
    for (int t = 0; t < 3; ++t)
      for (int o = 0; o < 19; ++o) {
        double s = b.item({o});
        for (int k = 0; k < 37; ++k) s += double(x.item({i, t, k})) * w.item({o, k});
        worst = std::max(worst, std::fabs(s - y.item({i, t, o})));
      }
  REQUIRE(worst < 1e-5);
  Tensor y0 = ops::linear(x, w);
  REQUIRE(std::fabs(y0.item({1, 2, 3}) + b.item({3}) - y.item({1, 2, 3})) < 1e-5);
  REQUIRE_THROWS_AS(ops::linear(x, test::random_tensor({4, 36}, 1)), Error);
}

TEST_CASE("ops: linear_fp8 quantizes x with the input scale (clamped at 448) and scales the e4m3 product") {
  // Weights and inputs chosen so every step is exact or known: w8 holds e4m3 values, x / 0.5 lands
  // on e4m3 values except 1.3 / 0.5 = 2.6 (rounds to 2.5) and the clamped 300 / 0.5 = 600 (448).
  const float input_scale = 0.5f, weight_scale = 0.25f;
  const Tensor w = Tensor::from_vector({1, -2, 0.5f, 4, 3, 0, -1, 0.125f}, {2, 4});
  const Tensor x = Tensor::from_vector({1.3f, -0.25f, 300, 2, 0, 1, -1, 0.75f}, {2, 4});
  ops::Fp8Linear fp8{w.to(DType::F8E4M3), Tensor::scalar(weight_scale), Tensor::scalar(input_scale),
                     Tensor::from_vector({10, -10}, {2})};
  const float q[2][4] = {{2.5f, -0.5f, 448, 4}, {0, 2, -2, 1.5f}};
  const Tensor y = ops::linear_fp8(x, fp8);
  REQUIRE(y.shape() == Shape{2, 2});
  REQUIRE(y.dtype() == DType::F32);
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 2; ++n) {
      double want = n == 0 ? 10 : -10;
      for (int k = 0; k < 4; ++k) want += double(q[m][k]) * input_scale * w.item({n, k}) * weight_scale;
      INFO("y[" << m << ", " << n << "]");
      REQUIRE(std::fabs(y.item({m, n}) - want) <= 1e-6 * std::fabs(want) + 1e-6);
    }
  // An input already in F8_E4M3 is taken as quantized; a bf16 input answers in bf16; the GELU
  // variant is gelu_tanh of the plain one.
  const Tensor codes =
      Tensor::from_vector({q[0][0], q[0][1], q[0][2], q[0][3], q[1][0], q[1][1], q[1][2], q[1][3]}, {2, 4})
          .to(DType::F8E4M3);
  REQUIRE(test::max_abs_diff(ops::linear_fp8(codes, fp8), y) == 0);
  REQUIRE(ops::linear_fp8(x.to(DType::BF16), fp8).dtype() == DType::BF16);
  REQUIRE(test::max_abs_diff(ops::linear_fp8(x, fp8, true), ops::gelu_tanh(y)) == 0);
  // A weight that is not F8_E4M3, or a scale that is not a float32 scalar, is refused.
  REQUIRE_THROWS_WITH(ops::linear_fp8(x, {w, fp8.weight_scale, fp8.input_scale, {}}), Contains("F8_E4M3"));
  REQUIRE_THROWS_WITH(ops::linear_fp8(x, {fp8.weight, Tensor::from_vector({1, 2}, {2}), fp8.input_scale, {}}),
                      Contains("float32 scalars"));
}

TEST_CASE("ops: quantize_rows_f8e4m3 gives each row the scale max|row| / 448, a zero row 1, and keeps NaN") {
  const Tensor x = Tensor::from_vector({1.f, -4.f, 2.f, 0.f, 0.f, 0.f, 0.5f, NAN, -0.25f}, {3, 3});
  const ops::Fp8Rows r = ops::quantize_rows_f8e4m3(x);
  REQUIRE(r.codes.dtype() == DType::F8E4M3);
  REQUIRE(r.codes.shape() == x.shape());
  REQUIRE(r.dtype == DType::F32);
  // Row 0: scale 4/448 (rounded once), so -4 is -448 and 1 and 2 are 112 and 224 (e4m3 values,
  // whatever the last bit of the scale). Row 1: zeros with scale 1. Row 2: the NaN skipped by the
  // max, kept in its code.
  REQUIRE(r.scales.to_vector() == std::vector<float>{4.f * (1.f / 448.f), 1.f, 0.5f * (1.f / 448.f)});
  const std::vector<float> codes = r.codes.to(DType::F32).to_vector();
  REQUIRE(codes[0] == 112.f);
  REQUIRE(codes[1] == -448.f);
  REQUIRE(codes[2] == 224.f);
  REQUIRE(codes[3] == 0.f);
  REQUIRE(codes[6] == 448.f);
  REQUIRE(std::isnan(codes[7]));
  REQUIRE(codes[8] == -224.f);
  // A bf16 input keeps its dtype for the linear that reads the rows; an infinite row gives an
  // infinite scale (its products NaN, not finite and wrong).
  REQUIRE(ops::quantize_rows_f8e4m3(x.to(DType::BF16)).dtype == DType::BF16);
  REQUIRE(std::isinf(ops::quantize_rows_f8e4m3(Tensor::from_vector({INFINITY, 1.f}, {1, 2})).scales.item()));
  REQUIRE_THROWS_WITH(ops::quantize_rows_f8e4m3(Tensor::empty({2, 0})), Contains("no rows"));
}

TEST_CASE(
    "ops: linear_fp8 of per-row quantized inputs scales each product by its row's and channel's scale") {
  const Tensor x = test::random_tensor({2, 3, 32}, 41), w = test::random_tensor({16, 32}, 42);
  const Tensor bias = test::random_tensor({16}, 43);
  const ops::Fp8Rows rows = ops::quantize_rows_f8e4m3(x);
  const ops::Fp8Rows wq = ops::quantize_rows_f8e4m3(w);  // one scale per output channel
  const ops::Fp8Linear fp8{wq.codes, wq.scales, Tensor(), bias};
  const Tensor y = ops::linear_fp8(rows, fp8);
  REQUIRE(y.shape() == Shape{2, 3, 16});
  const Tensor xc = rows.codes.to(DType::F32).view({6, 32}), wc = wq.codes.to(DType::F32);
  double worst = 0, largest = 0;
  for (int m = 0; m < 6; ++m)
    for (int n = 0; n < 16; ++n) {
      double dot = 0;
      for (int k = 0; k < 32; ++k) dot += double(xc.item({m, k})) * wc.item({n, k});
      const double want = dot * rows.scales.item({m}) * wq.scales.item({n}) + bias.item({n});
      worst = std::max(worst, std::fabs(want - y.view({6, 16}).item({m, n})));
      largest = std::max(largest, std::fabs(want));
    }
  REQUIRE(worst <= 1e-5 * largest);
  // Near the float32 linear: e4m3 keeps 3 mantissa bits, so a few percent of the largest output.
  REQUIRE(test::max_abs_diff(y, ops::linear(x, w, bias)) < 0.06 * largest);
  // The per-tensor op with no static input scale is the same per-row linear; GELU is the epilogue.
  REQUIRE(test::max_abs_diff(ops::linear_fp8(x, fp8), y) == 0);
  REQUIRE(test::max_abs_diff(ops::linear_fp8(rows, fp8, true), ops::gelu_tanh(y)) == 0);
  // Per-row activations need a scale per output channel, and no static input scale.
  REQUIRE_THROWS_WITH(ops::linear_fp8(rows, {wq.codes, Tensor::scalar(1.f), Tensor(), bias}),
                      Contains("per output channel"));
  REQUIRE_THROWS_WITH(ops::linear_fp8(rows, {wq.codes, wq.scales, Tensor::scalar(1.f), bias}),
                      Contains("no static input scale"));
  REQUIRE_THROWS_WITH(ops::linear_fp8(ops::quantize_rows_f8e4m3(test::random_tensor({2, 16}, 1)), fp8),
                      Contains("do not match"));
}

TEST_CASE("ops: matmul, batched and shared right operand, strided inputs") {
  Tensor a = test::random_tensor({2, 4, 5}, 4), b = test::random_tensor({2, 5, 3}, 5);
  Tensor c = ops::matmul(a, b);
  double s = 0;
  for (int k = 0; k < 5; ++k) s += double(a.item({1, 2, k})) * b.item({1, k, 1});
  REQUIRE(std::fabs(s - c.item({1, 2, 1})) < 1e-5);
  Tensor b2 = test::random_tensor({3, 5}, 6).transpose(0, 1);  // non-contiguous [5, 3]
  Tensor c2 = ops::matmul(a, b2);
  s = 0;
  for (int k = 0; k < 5; ++k) s += double(a.item({0, 3, k})) * b2.item({k, 2});
  REQUIRE(std::fabs(s - c2.item({0, 3, 2})) < 1e-5);
}

TEST_CASE("ops: broadcasting binary ops") {
  Tensor a = test::random_tensor({2, 1, 4}, 7), b = test::random_tensor({3, 1}, 8);
  Tensor c = ops::add(a, b);
  REQUIRE(c.shape() == Shape{2, 3, 4});
  REQUIRE(c.item({1, 2, 3}) == a.item({1, 0, 3}) + b.item({2, 0}));
  REQUIRE(ops::mul(a, b).item({0, 1, 2}) == a.item({0, 0, 2}) * b.item({1, 0}));
  REQUIRE(ops::sub(a, a).to_vector() == std::vector<float>(8, 0.f));
  REQUIRE_THROWS_AS(ops::add(a, test::random_tensor({3, 3}, 1)), Error);
}

TEST_CASE("ops: activations") {
  Tensor x = Tensor::from_vector({-2.f, -0.5f, 0.f, 0.5f, 3.f}, {5});
  auto gt = ops::gelu_tanh(x).to_vector();
  auto ge = ops::gelu(x).to_vector();
  auto si = ops::silu(x).to_vector();
  for (int i = 0; i < 5; ++i) {
    double v = x.item({i});
    double t = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    REQUIRE(std::fabs(gt[i] - t) < 1e-6);
    REQUIRE(std::fabs(ge[i] - 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))) < 1e-6);
    REQUIRE(std::fabs(si[i] - v / (1 + std::exp(-v))) < 1e-6);
  }
  REQUIRE(ops::unary(x, ops::UnaryOp::LeakyRelu, 0.1f).item({0}) == Approx(-0.2f));
}

TEST_CASE("ops: reductions and softmax") {
  Tensor x = test::random_tensor({3, 4, 5}, 9);
  Tensor s = ops::sum(x, 1);
  REQUIRE(s.shape() == Shape{3, 5});
  double e = 0;
  for (int j = 0; j < 4; ++j) e += x.item({2, j, 3});
  REQUIRE(std::fabs(s.item({2, 3}) - e) < 1e-6);
  REQUIRE(ops::mean(x, -1, true).shape() == Shape{3, 4, 1});
  REQUIRE(ops::amax(x, 0).item({1, 1}) ==
          std::max({x.item({0, 1, 1}), x.item({1, 1, 1}), x.item({2, 1, 1})}));
  Tensor p = ops::softmax(x);
  auto row = ops::sum(p, -1).to_vector();
  for (float v : row) REQUIRE(std::fabs(v - 1.f) < 1e-6);
  double denom = 0;
  for (int k = 0; k < 5; ++k) denom += std::exp(double(x.item({0, 0, k})));
  REQUIRE(std::fabs(p.item({0, 0, 2}) - std::exp(double(x.item({0, 0, 2}))) / denom) < 1e-6);
}

TEST_CASE("ops: rms_norm and layer_norm") {
  Tensor x = test::random_tensor({2, 8}, 10), w = test::random_tensor({8}, 11),
         b = test::random_tensor({8}, 12);
  Tensor r = ops::rms_norm(x, w, 1e-6f);
  double ms = 0;
  for (int i = 0; i < 8; ++i) ms += double(x.item({1, i})) * x.item({1, i});
  double inv = 1 / std::sqrt(ms / 8 + 1e-6);
  REQUIRE(std::fabs(r.item({1, 3}) - x.item({1, 3}) * inv * w.item({3})) < 1e-5);
  Tensor l = ops::layer_norm(x, w, b, 1e-6f);
  double mean = 0, var = 0;
  for (int i = 0; i < 8; ++i) mean += x.item({0, i});
  mean /= 8;
  for (int i = 0; i < 8; ++i) var += (x.item({0, i}) - mean) * (x.item({0, i}) - mean);
  var /= 8;
  double want = (x.item({0, 5}) - mean) / std::sqrt(var + 1e-6) * w.item({5}) + b.item({5});
  REQUIRE(std::fabs(l.item({0, 5}) - want) < 1e-5);
  Tensor plain = ops::layer_norm(x, {}, {}, 1e-6f);
  REQUIRE(std::fabs(ops::mean(plain, -1).item({1})) < 1e-6);
}

TEST_CASE("ops: attention equals softmax(q kᵀ·scale + mask) v, masked keys excluded") {
  Tensor q = test::random_tensor({1, 2, 3, 4}, 13), k = test::random_tensor({1, 2, 5, 4}, 14);
  Tensor v = test::random_tensor({1, 2, 5, 6}, 15);
  Tensor mask = Tensor::zeros({1, 1, 1, 5}, DType::Bool);
  for (int j = 0; j < 3; ++j) mask.data<uint8_t>()[j] = 1;  // keys 3, 4 excluded
  Tensor o = ops::attention(q, k, v, mask);
  REQUIRE(o.shape() == Shape{1, 2, 3, 6});
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 3; ++i) {
      double sc[3], mx = -1e30, den = 0;
      for (int j = 0; j < 3; ++j) {
        double s = 0;
        for (int d = 0; d < 4; ++d) s += double(q.item({0, h, i, d})) * k.item({0, h, j, d});
        sc[j] = s / 2.0;
        mx = std::max(mx, sc[j]);
      }
      for (double& s : sc) den += (s = std::exp(s - mx));
      for (int d = 0; d < 6; ++d) {
        double want = 0;
        for (int j = 0; j < 3; ++j) want += sc[j] / den * v.item({0, h, j, d});
        REQUIRE(std::fabs(want - o.item({0, h, i, d})) < 1e-5);
      }
    }
  }
  // An additive float mask of -inf is the same as excluding.
  Tensor fmask = Tensor::full({1, 1, 1, 5}, 0.f);
  fmask.data<float>()[3] = fmask.data<float>()[4] = -INFINITY;
  REQUIRE(test::max_abs_diff(ops::attention(q, k, v, fmask), o) < 1e-6);
}

TEST_CASE("ops: attention engine and precision names parse back, others are refused naming their source") {
  for (ops::AttentionEngine e : {ops::AttentionEngine::Auto, ops::AttentionEngine::Wgmma,
                                 ops::AttentionEngine::Fa3, ops::AttentionEngine::Cudnn})
    REQUIRE(ops::parse_attention_engine(ops::attention_engine_name(e), "test") == e);
  for (ops::AttentionPrecision p : {ops::AttentionPrecision::Bf16, ops::AttentionPrecision::EightBit})
    REQUIRE(ops::parse_attention_precision(ops::attention_precision_name(p), "test") == p);
  REQUIRE_THROWS_WITH(
      ops::parse_attention_engine("sage", "LTX2_ATTENTION"),
      Contains("LTX2_ATTENTION: unknown attention engine 'sage' (auto, wgmma, fa3 or cudnn)"));
  REQUIRE_THROWS_WITH(
      ops::parse_attention_precision("int8", "LTX2_ATTENTION_PRECISION"),
      Contains("LTX2_ATTENTION_PRECISION: unknown attention precision 'int8' (bf16 or 8bit)"));
}

TEST_CASE("ops: the CPU ignores the 8-bit attention precision") {
  Tensor q = test::random_tensor({1, 2, 5, 128}, 40), k = test::random_tensor({1, 2, 7, 128}, 41),
         v = test::random_tensor({1, 2, 7, 128}, 42);
  const Tensor bf16 = ops::attention(q, k, v);
  const ops::AttentionPrecision saved = ops::attention_precision();
  ops::set_attention_precision(ops::AttentionPrecision::EightBit);
  const Tensor eight = ops::attention(q, k, v);
  ops::set_attention_precision(saved);
  REQUIRE(test::max_abs_diff(eight, bf16) == 0.0);
}

TEST_CASE("ops: attention with an all-zero or key-padding mask equals the unmasked result bit for bit") {
  const Tensor q = test::random_tensor({1, 12, 12, 8}, 1), k = test::random_tensor({1, 12, 12, 8}, 2),
               v = test::random_tensor({1, 12, 12, 8}, 3);
  const Tensor plain = ops::attention(q, k, v, {});
  CHECK(test::max_abs_diff(ops::attention(q, k, v, Tensor::zeros({1, 1, 1, 12})), plain) == 0.0f);
  // Two padded keys hidden by -FLT_MAX, as sequence parallelism's padding mask does.
  Tensor padding = Tensor::zeros({1, 1, 1, 14});
  padding.narrow(3, 12, 2).fill_(-std::numeric_limits<float>::max());
  CHECK(test::max_abs_diff(ops::attention(q, ops::pad(k, 2, 0, 2), ops::pad(v, 2, 0, 2), padding), plain) ==
        0.0f);
}

TEST_CASE(
    "ops: grouped-query attention reads KV head h / (H / Hkv), the repeated heads' result bit for bit") {
  const Tensor q = test::random_tensor({2, 6, 5, 8}, 21), k = test::random_tensor({2, 3, 7, 8}, 22),
               v = test::random_tensor({2, 3, 7, 4}, 23);
  // Each KV head copied out to the two query heads it serves (Hugging Face's repeat_kv).
  auto repeated = [](const Tensor& x) {
    return x.unsqueeze(2).expand({2, 3, 2, 7, x.size(3)}).reshape({2, 6, 7, x.size(3)});
  };
  Tensor mask = Tensor::zeros({2, 1, 5, 7});
  mask.narrow(3, 5, 2).fill_(-INFINITY);
  CHECK(ops::attention_kv_group(q, k, v) == 2);
  for (const Tensor& m : {Tensor(), mask}) {
    const Tensor grouped = ops::attention(q, k, v, m, 0.3f);
    REQUIRE(grouped.shape() == Shape{2, 6, 5, 4});
    CHECK(test::max_abs_diff(grouped, ops::attention(q, repeated(k), repeated(v), m, 0.3f)) == 0.0f);
  }
  // H must be a multiple of Hkv, and k and v must agree.
  const Tensor k4 = ops::cat({k, k.narrow(1, 0, 1)}, 1), v4 = ops::cat({v, v.narrow(1, 0, 1)}, 1);  // 4 heads
  REQUIRE_THROWS_WITH(ops::attention(q, k4, v4), Contains("H a multiple of Hkv"));
  REQUIRE_THROWS_AS(ops::attention(q, k, v.narrow(1, 0, 1).contiguous()), Error);
}

TEST_CASE("ops: cat and pad") {
  Tensor a = test::random_tensor({2, 3}, 16), b = test::random_tensor({2, 1}, 17);
  Tensor c = ops::cat({a, b}, 1);
  REQUIRE(c.shape() == Shape{2, 4});
  REQUIRE(c.item({1, 3}) == b.item({1, 0}));
  Tensor p = ops::pad(a, 0, 1, 2, -1.f);
  REQUIRE(p.shape() == Shape{5, 3});
  REQUIRE(p.item({0, 0}) == -1.f);
  REQUIRE(p.item({1, 2}) == a.item({0, 2}));
  REQUIRE_THROWS_AS(ops::cat({a, test::random_tensor({3, 1}, 1)}, 1), Error);
}

TEST_CASE("ops: bf16 operands on the CPU compute in float32 and round the result to bf16") {
  auto bf16 = [](const Tensor& t) { return t.to(DType::BF16); };
  auto rounded = [](const Tensor& t) { return t.to(DType::BF16).to(DType::F32); };
  const Tensor x = rounded(test::random_tensor({1, 3, 2, 4, 4}, 1)),
               w = rounded(test::random_tensor({2, 3, 1, 3, 3}, 2));
  const Tensor b = rounded(test::random_tensor({2}, 3));
  ops::Conv3dParams p;
  p.padding = {0, 1, 1};
  const Tensor y = ops::conv3d(bf16(x), bf16(w), bf16(b), p);
  REQUIRE(y.dtype() == DType::BF16);
  REQUIRE(test::max_abs_diff(y.to(DType::F32), rounded(ops::conv3d(x, w, b, p))) == 0.f);
  // A float32 operand promotes a binary op's result, as on the GPU; unary ops keep their dtype.
  REQUIRE(ops::add(bf16(x), x).dtype() == DType::F32);
  REQUIRE(ops::mul(bf16(x), bf16(x)).dtype() == DType::BF16);
  const Tensor s = ops::silu(bf16(x));
  REQUIRE(s.dtype() == DType::BF16);
  REQUIRE(test::max_abs_diff(s.to(DType::F32), rounded(ops::silu(x))) == 0.f);
  REQUIRE(ops::linear(bf16(x.view({6, 16})), bf16(test::random_tensor({5, 16}, 4)), Tensor()).dtype() ==
          DType::BF16);
}
