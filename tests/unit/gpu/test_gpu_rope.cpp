// The CUDA RoPE tables against the CPU tables (both layouts, float32 and float64 grids, interval and
// point positions, padded tables; f32 within 1e-6) and the CUDA RoPE application against the CPU op: split
// and interleaved tables, per-sample and broadcast (batch 1) tables, bf16 under the FlashAttention-style rule
// (the naive bf16 computation rounds x, cos and sin to bf16, as the reference's bf16 model does) and f32
// tightly.
#include "core/error.h"
#include "gpu_compare.h"
#include "ops/elementwise.h"
#include "ops/rope.h"
#include "ops/shape.h"
#include "support/test_util.h"

using namespace ltx2;
using test::round_bf16;
using test::to_gpu;

namespace {

// Interval positions [B, axes, T, 2] spread over [0, 40) so that the angles cover several turns.
Tensor random_positions(int64_t B, int64_t axes, int64_t T, uint64_t seed) {
  Tensor start = ops::mul(ops::add(test::random_tensor({B, axes, T, 1}, seed), 1.f), 20.f);
  return ops::cat({start, ops::add(start, 1.f)}, 3);
}

ops::RopeSpec spec_of(ops::RopeLayout layout, int64_t dim, int64_t heads, int64_t axes) {
  ops::RopeSpec s;
  s.dim = dim;
  s.heads = heads;
  s.max_pos = std::vector<double>(static_cast<size_t>(axes), 20.0);
  s.layout = layout;
  return s;
}

void check_layout(ops::RopeLayout layout, int64_t table_batch, uint64_t seed) {
  const int64_t B = 2, T = 37, dim = 96, heads = 4, axes = 3;
  const Tensor x = test::random_tensor({B, T, dim}, seed);
  const ops::RopeTables cpu =
      ops::rope_tables(random_positions(table_batch, axes, T, seed + 1), spec_of(layout, dim, heads, axes));
  const Tensor ref = ops::apply_rope(x, cpu);
  const ops::RopeTables rounded{round_bf16(cpu.cos), round_bf16(cpu.sin), layout};
  const Tensor naive = round_bf16(ops::apply_rope(round_bf16(x), rounded));
  const ops::RopeTables gpu{cpu.cos.to(test::gpu()), cpu.sin.to(test::gpu()), layout};
  const Tensor got = ops::apply_rope(to_gpu(x, DType::BF16), gpu);
  REQUIRE(got.dtype() == DType::BF16);
  REQUIRE(got.shape() == x.shape());
  test::require_bf16_close("apply_rope bf16", got, naive, ref);
  test::require_f32_close("apply_rope f32", ops::apply_rope(to_gpu(x, DType::F32), gpu), ref, 1e-6);
}

}  // namespace

TEST_CASE("gpu: apply_rope split tables, per-sample and broadcast") {
  check_layout(ops::RopeLayout::Split, 2, 10);
  check_layout(ops::RopeLayout::Split, 1, 20);
}

TEST_CASE("gpu: apply_rope interleaved tables, per-sample and broadcast") {
  check_layout(ops::RopeLayout::Interleaved, 2, 30);
  check_layout(ops::RopeLayout::Interleaved, 1, 40);
}

TEST_CASE("gpu: apply_rope on a strided x, and tables left on the host are refused") {
  const int64_t T = 20, dim = 64;
  const Tensor wide = test::random_tensor({1, T, 2 * dim}, 50);
  const Tensor x = wide.narrow(2, dim, dim);  // not contiguous
  const ops::RopeTables cpu =
      ops::rope_tables(random_positions(1, 1, T, 51), spec_of(ops::RopeLayout::Split, dim, 2, 1));
  const ops::RopeTables gpu{cpu.cos.to(test::gpu()), cpu.sin.to(test::gpu()), cpu.layout};
  test::require_f32_close("apply_rope strided f32",
                          ops::apply_rope(to_gpu(wide, DType::F32).narrow(2, dim, dim), gpu),
                          ops::apply_rope(x, cpu), 1e-6);
  REQUIRE_THROWS_AS(ops::apply_rope(to_gpu(x, DType::F32), cpu), Error);
}

namespace {

void check_tables(ops::RopeLayout layout, ops::RopeGridPrecision grid, const Tensor& positions, int64_t dim,
                  int64_t heads) {
  ops::RopeSpec spec = spec_of(layout, dim, heads, positions.size(1));
  spec.grid = grid;
  spec.max_pos = {20.0, 2048.0, 2048.0, 7.0};
  spec.max_pos.resize(static_cast<size_t>(positions.size(1)));
  const ops::RopeTables cpu = ops::rope_tables(positions, spec);
  const ops::RopeTables got = ops::rope_tables(positions.to(test::gpu()), spec);
  REQUIRE(got.cos.device() == test::gpu());
  REQUIRE(got.layout == layout);
  REQUIRE(got.cos.shape() == cpu.cos.shape());
  test::require_f32_close("rope cos", got.cos, cpu.cos, 1e-6);
  test::require_f32_close("rope sin", got.sin, cpu.sin, 1e-6);
}

}  // namespace

TEST_CASE("gpu: RoPE tables formed on the GPU match the CPU tables") {
  using L = ops::RopeLayout;
  using G = ops::RopeGridPrecision;
  const Tensor intervals = ops::mul(random_positions(2, 3, 41, 60), 40.f);  // angles of many turns
  for (G grid : {G::Float32, G::Float64}) {
    check_tables(L::Split, grid, intervals, 96, 4);        // padded: 48 - 3 * 16 = 0
    check_tables(L::Split, grid, intervals, 112, 2);       // padded: 56 - 3 * 18 = 2
    check_tables(L::Interleaved, grid, intervals, 98, 1);  // padded: 98 % 6 = 2
  }
  const Tensor points = ops::mul(test::random_tensor({1, 1, 29}, 61), 500.f);
  check_tables(L::Split, G::Float64, points, 64, 2);
  check_tables(L::Interleaved, G::Float32, points, 64, 1);
  // A strided (sliced) positions tensor, as the A<->V tables read the time axis.
  check_tables(L::Split, G::Float64, intervals.slice(1, 0, 1), 64, 2);
}
