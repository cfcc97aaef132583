// The fused AdaLN ops on the CPU against naive double-precision loops written out here: rows read
// from a [B, T', rows * D] AdaLN output (per token and per sample) plus the table row; rows of
// distinct timesteps read through an index equal the per-token rows they stand for, bit for bit.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ops/adaln.h"
#include "ops/linear.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

// table[row][i] + modulation[b, t or 0, row * D + i]
double ada(const Tensor& table, const Tensor& modulation, int64_t row, int b, int t, int i) {
  const int64_t D = table.size(1);
  const int te = modulation.size(1) == 1 ? 0 : t;
  return double(table.item({row, i})) + modulation.item({b, te, static_cast<int>(row * D + i)});
}

void check(int64_t T_emb, uint64_t seed) {
  const int B = 2, T = 5, D = 24, R = 6;
  const Tensor x = test::random_tensor({B, T, D}, seed), y = test::random_tensor({B, T, D}, seed + 1);
  const Tensor table = test::random_tensor({R, D}, seed + 2);
  const Tensor modulation = test::random_tensor({B, T_emb, R * D}, seed + 3);
  const float eps = 1e-6f;
  const Tensor mod = ops::rms_norm_modulate(x, ops::ada_row(table, 0, modulation, R, 0),
                                            ops::ada_row(table, 1, modulation, R, 1), eps);
  const Tensor gated = ops::add_gated(x, y, ops::ada_row(table, 2, modulation, R, 2));
  REQUIRE(mod.shape() == x.shape());
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      double ss = 0;
      for (int i = 0; i < D; ++i) ss += double(x.item({b, t, i})) * x.item({b, t, i});
      const double inv = 1.0 / std::sqrt(ss / D + eps);
      for (int i = 0; i < D; ++i) {
        const double want_mod = x.item({b, t, i}) * inv * (1 + ada(table, modulation, 1, b, t, i)) +
                                ada(table, modulation, 0, b, t, i);
        const double want_gated = x.item({b, t, i}) + y.item({b, t, i}) * ada(table, modulation, 2, b, t, i);
        worst = std::max({worst, std::fabs(want_mod - mod.item({b, t, i})),
                          std::fabs(want_gated - gated.item({b, t, i}))});
      }
    }
  REQUIRE(worst < 1e-5);
}

}  // namespace

TEST_CASE("ops: rms_norm_modulate and add_gated with per-token and per-sample rows") {
  check(5, 1);
  check(1, 11);
}

TEST_CASE("ops: rms_norm_modulate_fp8 is rms_norm_modulate's rows quantized each with its own scale") {
  const Tensor x = test::random_tensor({2, 5, 32}, 21), table = test::random_tensor({2, 32}, 22);
  const Tensor modulation = test::random_tensor({2, 1, 64}, 23);
  const ops::AdaRow shift = ops::ada_row(table, 0, modulation, 2, 0),
                    scale = ops::ada_row(table, 1, modulation, 2, 1);
  const ops::Fp8Rows got = ops::rms_norm_modulate_fp8(x, shift, scale, 1e-6f);
  const ops::Fp8Rows want = ops::quantize_rows_f8e4m3(ops::rms_norm_modulate(x, shift, scale, 1e-6f));
  REQUIRE(got.codes.shape() == x.shape());
  REQUIRE(got.scales.shape() == Shape{10});
  REQUIRE(got.dtype == DType::F32);
  REQUIRE(test::max_abs_diff(got.codes.to(DType::F32), want.codes.to(DType::F32)) == 0);
  REQUIRE(test::max_abs_diff(got.scales, want.scales) == 0);
}

TEST_CASE("ops: ada_row refuses a row outside the table or a modulation of another width") {
  const Tensor table = test::random_tensor({3, 8}, 1), modulation = test::random_tensor({1, 2, 24}, 2);
  REQUIRE_THROWS_AS(ops::ada_row(table, 3, modulation, 3, 0), Error);
  REQUIRE_THROWS_AS(ops::ada_row(table, 0, modulation, 2, 0), Error);
  REQUIRE_THROWS_AS(ops::add_gated(test::random_tensor({1, 2, 9}, 3), test::random_tensor({1, 2, 9}, 4),
                                   ops::ada_row(table, 0, modulation, 3, 0)),
                    Error);
}

namespace {

// An int32 [B, T] index from values.
Tensor index_of(const std::vector<int32_t>& v, int64_t B, int64_t T) {
  Tensor t = Tensor::empty({B, T}, DType::I32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

}  // namespace

TEST_CASE("ops: gather_rows copies each token's row, runs and all") {
  const Tensor rows = test::random_tensor({1, 3, 4}, 31);
  const Tensor g = ops::gather_rows(rows, index_of({2, 2, 0, 1, 1, 1, 0, 0, 2, 1}, 2, 5));
  REQUIRE(g.shape() == Shape{2, 5, 4});
  const int32_t want[] = {2, 2, 0, 1, 1, 1, 0, 0, 2, 1};
  for (int k = 0; k < 10; ++k)
    for (int i = 0; i < 4; ++i) REQUIRE(g.item({k / 5, k % 5, i}) == rows.item({0, want[k], i}));
  REQUIRE_THROWS_AS(ops::gather_rows(rows, index_of({0, 3}, 1, 2)), Error);                 // row 3 of 3
  REQUIRE_THROWS_AS(ops::gather_rows(rows, index_of({0, 1}, 1, 2).to(DType::F32)), Error);  // not int32
}

TEST_CASE("ops: AdaLN rows of distinct timesteps read by index equal the per-token rows") {
  const int64_t B = 2, T = 6, D = 16, R = 6, U = 3;
  const Tensor x = test::random_tensor({B, T, D}, 41), y = test::random_tensor({B, T, D}, 42);
  const Tensor table = test::random_tensor({R, D}, 43), distinct = test::random_tensor({1, U, R * D}, 44);
  const Tensor index = index_of({1, 1, 0, 0, 0, 2, 2, 0, 0, 1, 1, 1}, B, T);
  const Tensor per_token = ops::gather_rows(distinct, index);  // [B, T, R * D]
  auto indexed = [&](int64_t r) { return ops::ada_row(table, r, distinct, R, r, index); };
  auto plain = [&](int64_t r) { return ops::ada_row(table, r, per_token, R, r); };
  REQUIRE(test::max_abs_diff(ops::rms_norm_modulate(x, indexed(0), indexed(1), 1e-6f),
                             ops::rms_norm_modulate(x, plain(0), plain(1), 1e-6f)) == 0);
  REQUIRE(test::max_abs_diff(ops::add_gated(x, y, indexed(2)), ops::add_gated(x, y, plain(2))) == 0);
  const ops::Fp8Rows a = ops::rms_norm_modulate_fp8(x, indexed(3), indexed(4), 1e-6f);
  const ops::Fp8Rows b = ops::rms_norm_modulate_fp8(x, plain(3), plain(4), 1e-6f);
  REQUIRE(test::max_abs_diff(a.codes.to(DType::F32), b.codes.to(DType::F32)) == 0);
  REQUIRE(test::max_abs_diff(a.scales, b.scales) == 0);
  // An index that is not [B, T] of x, or rows that are not [1, U, ...], is refused.
  REQUIRE_THROWS_AS(ops::add_gated(x, y, ops::ada_row(table, 2, distinct, R, 2, index_of({0, 0}, 1, 2))),
                    Error);
  REQUIRE_THROWS_AS(ops::ada_row(table, 0, per_token, R, 0, index), Error);
}

TEST_CASE("ops: linear_gelu_tanh is the tanh GELU of the linear") {
  const Tensor x = test::random_tensor({3, 16}, 5), w = test::random_tensor({7, 16}, 6),
               b = test::random_tensor({7}, 7);
  const Tensor y = ops::linear_gelu_tanh(x, w, b), lin = ops::linear(x, w, b);
  double worst = 0;
  for (int r = 0; r < 3; ++r)
    for (int o = 0; o < 7; ++o) {
      const double v = lin.item({r, o});
      const double want =
          0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
      worst = std::max(worst, std::fabs(want - y.item({r, o})));
    }
  REQUIRE(worst < 1e-6);
}
