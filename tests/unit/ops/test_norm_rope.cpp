// The fused qk-norm + RoPE op against its definition: the composition rms_norm -> apply_rope (split
// and interleaved tables, per-sample and broadcast, with and without a weight), one row checked by
// hand (the norm runs over the whole row, not per head), and the shape errors.
#include <cmath>

#include "core/error.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/rope.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

ops::RopeTables tables_for(ops::RopeLayout layout, int64_t batch, int64_t T, int64_t dim, int64_t heads) {
  ops::RopeSpec spec{dim, heads, 10000.0, {16.0, 32.0}, layout, ops::RopeGridPrecision::Float32};
  const Tensor pos = test::random_tensor({batch, 2, T}, 5 + static_cast<uint64_t>(batch));
  return ops::rope_tables(pos, spec);
}

void require_equal(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto va = a.to_vector(), vb = b.to_vector();
  for (size_t i = 0; i < va.size(); ++i) REQUIRE(va[i] == vb[i]);
}

}  // namespace

TEST_CASE("rms_norm_rope: equals rms_norm then apply_rope, both layouts, per-sample and broadcast") {
  const int64_t B = 2, T = 5, dim = 24, heads = 3;
  const Tensor x = test::random_tensor({B, T, dim}, 11);
  const Tensor w = test::random_tensor({dim}, 12);
  for (auto layout : {ops::RopeLayout::Split, ops::RopeLayout::Interleaved})
    for (int64_t table_batch : {int64_t{1}, B}) {
      const ops::RopeTables t = tables_for(layout, table_batch, T, dim, heads);
      for (const Tensor& weight : {w, Tensor()})
        require_equal(ops::rms_norm_rope(x, weight, 1e-6f, t),
                      ops::apply_rope(ops::rms_norm(x, weight, 1e-6f), t));
    }
}

TEST_CASE("rms_norm_rope: one row by hand, the norm over the whole row") {
  // Two heads of width 2: split pairs (0, 1) and (2, 3); the mean of squares is over all four.
  const Tensor x = Tensor::from_vector({1.f, 2.f, 3.f, 4.f}, {1, 1, 4});
  const Tensor w = Tensor::from_vector({1.f, 0.5f, 2.f, 1.f}, {4});
  const float c = 0.6f, s = 0.8f;
  const ops::RopeTables t{Tensor::from_vector({c, c}, {1, 2, 1, 1}),
                          Tensor::from_vector({s, s}, {1, 2, 1, 1}), ops::RopeLayout::Split};
  const Tensor y = ops::rms_norm_rope(x, w, 0.f, t);
  const float inv = 1.f / std::sqrt((1.f + 4.f + 9.f + 16.f) / 4.f);
  const float n[4] = {1.f * inv, 2.f * inv * 0.5f, 3.f * inv * 2.f, 4.f * inv};
  REQUIRE(std::fabs(y.item({0, 0, 0}) - (n[0] * c - n[1] * s)) < 1e-6f);
  REQUIRE(std::fabs(y.item({0, 0, 1}) - (n[1] * c + n[0] * s)) < 1e-6f);
  REQUIRE(std::fabs(y.item({0, 0, 2}) - (n[2] * c - n[3] * s)) < 1e-6f);
  REQUIRE(std::fabs(y.item({0, 0, 3}) - (n[3] * c + n[2] * s)) < 1e-6f);
}

TEST_CASE("rms_norm_rope: refuses x that is not [B, T, dim], a wrong weight and tables that do not fit") {
  const ops::RopeTables t = tables_for(ops::RopeLayout::Split, 1, 5, 24, 3);
  REQUIRE_THROWS_WITH(ops::rms_norm_rope(test::random_tensor({5, 24}, 1), Tensor(), 1e-6f, t),
                      Contains("[B, T, dim]"));
  REQUIRE_THROWS_WITH(
      ops::rms_norm_rope(test::random_tensor({1, 5, 24}, 1), test::random_tensor({12}, 2), 1e-6f, t),
      Contains("weight"));
  REQUIRE_THROWS_AS(ops::rms_norm_rope(test::random_tensor({1, 6, 24}, 1), Tensor(), 1e-6f, t), Error);
  const ops::RopeTables i = tables_for(ops::RopeLayout::Interleaved, 1, 5, 24, 1);
  REQUIRE_THROWS_AS(ops::rms_norm_rope(test::random_tensor({1, 5, 26}, 1), Tensor(), 1e-6f, i), Error);
}

TEST_CASE("rms_norm_rope_qk: equals two rms_norm_rope calls, and refuses q and k that differ") {
  const int64_t B = 2, T = 5, dim = 24, heads = 3;
  const Tensor q = test::random_tensor({B, T, dim}, 21), k = test::random_tensor({B, T, dim}, 22);
  const Tensor wq = test::random_tensor({dim}, 23), wk = test::random_tensor({dim}, 24);
  for (auto layout : {ops::RopeLayout::Split, ops::RopeLayout::Interleaved}) {
    const ops::RopeTables t = tables_for(layout, 1, T, dim, heads);
    const ops::NormedQk both = ops::rms_norm_rope_qk(q, wq, k, wk, 1e-6f, t);
    require_equal(both.q, ops::rms_norm_rope(q, wq, 1e-6f, t));
    require_equal(both.k, ops::rms_norm_rope(k, wk, 1e-6f, t));
    const ops::NormedQk plain = ops::rms_norm_rope_qk(q, Tensor(), k, Tensor(), 1e-6f, t);
    require_equal(plain.k, ops::rms_norm_rope(k, Tensor(), 1e-6f, t));
  }
  const ops::RopeTables t = tables_for(ops::RopeLayout::Split, 1, T, dim, heads);
  REQUIRE_THROWS_WITH(ops::rms_norm_rope_qk(q, wq, test::random_tensor({B, T - 1, dim}, 25), wk, 1e-6f, t),
                      Contains("q") && Contains("differ"));
  REQUIRE_THROWS_WITH(ops::rms_norm_rope_qk(q, wq, k, Tensor(), 1e-6f, t), Contains("weights"));
}
