// The fused qk-norm + RoPE kernel against the CPU op (rms_norm then apply_rope): split and interleaved
// tables, per-sample and broadcast, f32 / bf16 / no weight, widths on the 16-byte packed path and off
// it (odd half-head widths, a width not a multiple of 8), and a misaligned x; bf16 under the
// FlashAttention-style rule (the naive computation rounds x, w, the tables and the normed value to
// bf16) and within one bf16 rounding of the unfused GPU pair, f32 tightly (3e-5 for outputs up to ~5),
// bf16 tables against rounded CPU tables; q and k through rms_norm_rope_qk, each equal to its own call.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gpu_compare.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/norm_rope.h"
#include "ops/rope.h"
#include "ops/shape.h"
#include "support/test_util.h"

using namespace ltx2;
using test::round_bf16;
using test::to_gpu;

namespace {

constexpr float kEps = 1e-6f;

ops::RopeTables cpu_tables(ops::RopeLayout layout, int64_t batch, int64_t T, int64_t dim, int64_t heads,
                           uint64_t seed) {
  ops::RopeSpec spec{dim, heads, 10000.0, {20.0, 20.0}, layout, ops::RopeGridPrecision::Float32};
  const Tensor pos = ops::mul(ops::add(test::random_tensor({batch, 2, T}, seed), 1.f), 20.f);
  return ops::rope_tables(pos, spec);
}

ops::RopeTables on_gpu(const ops::RopeTables& t, DType dtype) {
  return {to_gpu(t.cos, dtype), to_gpu(t.sin, dtype), t.layout};
}

// x [B, T, dim] on the GPU in `dtype`, starting one element into its buffer when `misaligned`.
Tensor gpu_x(const Tensor& x, DType dtype, bool misaligned) {
  if (!misaligned) return to_gpu(x, dtype);
  const Tensor flat = to_gpu(ops::cat({Tensor::zeros({1}), x.flatten()}, 0), dtype);
  return flat.narrow(0, 1, x.numel()).view(x.shape());
}

// Every element of a within one bf16 rounding of b's (2^-7 relative), or 1e-5 where they cancel to ~0.
void require_within_one_rounding(const Tensor& a, const Tensor& b) {
  const auto va = test::to_host_f32(a).to_vector(), vb = test::to_host_f32(b).to_vector();
  REQUIRE(va.size() == vb.size());
  size_t off = 0;
  for (size_t i = 0; i < va.size(); ++i)
    if (!(std::fabs(va[i] - vb[i]) <=
          std::ldexp(1.f, -7) * std::max(std::fabs(va[i]), std::fabs(vb[i])) + 1e-5f))
      ++off;
  INFO(off << " of " << va.size() << " elements differ from the unfused pair by more than one rounding");
  REQUIRE(off == 0);
}

void require_identical(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto va = test::to_host_f32(a).to_vector(), vb = test::to_host_f32(b).to_vector();
  size_t off = 0;
  for (size_t i = 0; i < va.size(); ++i) off += va[i] != vb[i];
  INFO(off << " of " << va.size() << " elements differ");
  REQUIRE(off == 0);
}

void check(ops::RopeLayout layout, int64_t B, int64_t table_batch, int64_t T, int64_t dim, int64_t heads,
           bool misaligned, uint64_t seed) {
  INFO("layout " << int(layout) << " B " << B << " tables " << table_batch << " T " << T << " dim " << dim
                 << " heads " << heads << " misaligned " << misaligned);
  const Tensor x = ops::mul(test::random_tensor({B, T, dim}, seed), 3.f);
  const Tensor w = ops::add(test::random_tensor({dim}, seed + 1), 1.f);
  const ops::RopeTables cpu = cpu_tables(layout, table_batch, T, dim, heads, seed + 2);
  const ops::RopeTables rounded{round_bf16(cpu.cos), round_bf16(cpu.sin), layout};
  for (const Tensor& weight : {w, Tensor()}) {
    const Tensor ref = ops::rms_norm_rope(x, weight, kEps, cpu);
    const Tensor w_r = weight.defined() ? round_bf16(weight) : Tensor();
    const Tensor naive =
        round_bf16(ops::apply_rope(round_bf16(ops::rms_norm(round_bf16(x), w_r, kEps)), rounded));

    const ops::RopeTables gpu = on_gpu(cpu, DType::F32);
    const Tensor xb = gpu_x(x, DType::BF16, misaligned);
    for (DType wdtype : {DType::BF16, DType::F32}) {
      const Tensor wg = weight.defined() ? to_gpu(weight, wdtype) : Tensor();
      const Tensor got = ops::rms_norm_rope(xb, wg, kEps, gpu);
      REQUIRE(got.dtype() == DType::BF16);
      REQUIRE(got.shape() == x.shape());
      test::require_bf16_close("rms_norm_rope bf16", got, naive, ref);
      // The unfused GPU pair: the same arithmetic (equal unless the compiler contracts differently).
      const Tensor unfused = ops::apply_rope(ops::rms_norm(xb, wg, kEps), gpu);
      require_within_one_rounding(got, unfused);
    }
    // q and k through the shared-tables kernel: each bit for bit the single call's.
    const Tensor kb =
        gpu_x(ops::mul(test::random_tensor({B, T, dim}, seed + 3), 2.f), DType::BF16, misaligned);
    const Tensor wb = weight.defined() ? to_gpu(weight, DType::BF16) : Tensor();
    const Tensor wk = weight.defined() ? to_gpu(ops::mul(weight, 0.5f), DType::BF16) : Tensor();
    const ops::NormedQk pair = ops::rms_norm_rope_qk(xb, wb, kb, wk, kEps, gpu);
    require_identical(pair.q, ops::rms_norm_rope(xb, wb, kEps, gpu));
    require_identical(pair.k, ops::rms_norm_rope(kb, wk, kEps, gpu));
    const Tensor wf = weight.defined() ? to_gpu(weight, DType::F32) : Tensor();
    test::require_f32_close("rms_norm_rope f32",
                            ops::rms_norm_rope(gpu_x(x, DType::F32, misaligned), wf, kEps, gpu), ref, 3e-5);
    test::require_f32_close(
        "rms_norm_rope f32, bf16 tables",
        ops::rms_norm_rope(gpu_x(x, DType::F32, misaligned), wf, kEps, on_gpu(cpu, DType::BF16)),
        ops::rms_norm_rope(x, weight, kEps, rounded), 3e-5);
  }
}

}  // namespace

TEST_CASE("gpu: rms_norm_rope split tables, per-sample and broadcast, packed and unpacked widths") {
  check(ops::RopeLayout::Split, 2, 2, 9, 256, 2, false, 10);  // hd/2 = 64: packed
  check(ops::RopeLayout::Split, 2, 1, 7, 96, 4, false, 20);   // hd/2 = 12: f32 packed, bf16 not
  check(ops::RopeLayout::Split, 1, 1, 5, 90, 3, false, 30);   // hd/2 = 15: unpacked
  check(ops::RopeLayout::Split, 1, 1, 3, 4096, 32, false,
        40);  // the 19B's width, several packs per thread in f32
  check(ops::RopeLayout::Split, 1, 1, 2, 8192, 64, false, 45);       // 2 (bf16) and 4 (f32) packs a thread
  check(ops::RopeLayout::Split, 1, 1, 2, 3840, 128, false, 47);      // hd/2 = 15: 8 elements a thread
  check(ops::RopeLayout::Interleaved, 1, 1, 2, 6144, 1, false, 49);  // f32 past 4 packs: in pairs
}

TEST_CASE("gpu: rms_norm_rope interleaved tables, per-sample and broadcast, packed and unpacked widths") {
  check(ops::RopeLayout::Interleaved, 2, 2, 9, 96, 1, false, 50);  // packed
  check(ops::RopeLayout::Interleaved, 2, 1, 6, 90, 1, false, 60);  // 90 % 8 != 0: unpacked
  check(ops::RopeLayout::Interleaved, 1, 1, 4, 2048, 1, false, 70);
}

TEST_CASE("gpu: rms_norm_rope on a misaligned x, and tables left on the host are refused") {
  check(ops::RopeLayout::Split, 2, 1, 5, 256, 2, true, 80);
  check(ops::RopeLayout::Interleaved, 1, 1, 5, 96, 1, true, 90);
  const ops::RopeTables cpu = cpu_tables(ops::RopeLayout::Split, 1, 5, 64, 2, 100);
  REQUIRE_THROWS_AS(
      ops::rms_norm_rope(to_gpu(test::random_tensor({1, 5, 64}, 101), DType::BF16), Tensor(), kEps, cpu),
      Error);
}
