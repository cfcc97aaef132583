// The fused AdaLN ops on the GPU with mixed bf16 and f32 operands, promoted to f32 as the CPU ops
// promote them. Same-dtype parity (per-token, per-sample and table-only rows, packed and unpacked
// widths) is in test_backend_ops.cpp.
#include "gpu_compare.h"
#include "ops/adaln.h"
#include "ops/elementwise.h"
#include "support/test_util.h"

using namespace ltx2;
using test::round_bf16;
using test::to_gpu;

namespace {

constexpr int64_t kRows = 6;

struct Case {
  Tensor x, y, table, modulation;  // CPU f32; modulation undefined: table rows alone
};

Case make_case(int64_t B, int64_t T, int64_t T_emb, int64_t D, bool with_modulation, uint64_t seed) {
  Case c;
  c.x = ops::mul(test::random_tensor({B, T, D}, seed), 3.f);
  c.y = test::random_tensor({B, T, D}, seed + 1);
  c.table = ops::mul(test::random_tensor({kRows, D}, seed + 2), 0.5f);
  if (with_modulation) c.modulation = ops::mul(test::random_tensor({B, T_emb, kRows * D}, seed + 3), 0.5f);
  return c;
}

ops::AdaRow row_of(const Tensor& table, const Tensor& modulation, int64_t row) {
  return ops::ada_row(table, row, modulation, kRows, row);
}

}  // namespace

TEST_CASE("gpu: fused AdaLN ops promote mixed bf16 and f32 operands to f32") {
  const Case c = make_case(2, 7, 7, 64, true, 60);
  const Tensor table_r = round_bf16(c.table), mod_r = round_bf16(c.modulation), y_r = round_bf16(c.y);
  const Tensor x = to_gpu(c.x, DType::F32), y = to_gpu(c.y, DType::BF16);
  const Tensor table = to_gpu(c.table, DType::BF16), modulation = to_gpu(c.modulation, DType::BF16);
  const Tensor got_mod =
      ops::rms_norm_modulate(x, row_of(table, modulation, 0), row_of(table, modulation, 1), 1e-6f);
  const Tensor got_gated = ops::add_gated(x, y, row_of(table, modulation, 2));
  REQUIRE(got_mod.dtype() == DType::F32);
  REQUIRE(got_gated.dtype() == DType::F32);
  test::require_f32_close(
      "mixed rms_norm_modulate", got_mod,
      ops::rms_norm_modulate(c.x, row_of(table_r, mod_r, 0), row_of(table_r, mod_r, 1), 1e-6f), 1e-5);
  test::require_f32_close("mixed add_gated", got_gated, ops::add_gated(c.x, y_r, row_of(table_r, mod_r, 2)),
                          1e-6);
}
