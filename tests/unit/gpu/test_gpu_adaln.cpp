// The fused AdaLN ops on the GPU against the CPU ops: rms_norm_modulate and add_gated with per-token,
// per-sample and table-only rows read as views of a [B, T', rows * D] AdaLN output, widths that take
// the 16-byte packed path and one that does not; bf16 under the FlashAttention-style rule (the naive
// computation rounds the inputs and every unfused intermediate to bf16), f32 tightly, and mixed
// bf16/f32 operands promoted to f32.
#include "gpu_compare.h"
#include "ops/adaln.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
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

Tensor maybe(const Tensor& t, DType dtype) {
  return t.defined() ? to_gpu(t, dtype) : Tensor();
}

void check_case(const Case& c, const char* what) {
  const float eps = 1e-6f;
  // CPU float32 reference and the naive bf16 computation (every unfused step rounded).
  const ops::AdaRow shift = row_of(c.table, c.modulation, 3), scale = row_of(c.table, c.modulation, 1);
  const ops::AdaRow gate = row_of(c.table, c.modulation, 5);
  const Tensor ref_mod = ops::rms_norm_modulate(c.x, shift, scale, eps);
  const Tensor ref_gated = ops::add_gated(c.x, c.y, gate);
  const Tensor table_r = round_bf16(c.table);
  const Tensor mod_r = c.modulation.defined() ? round_bf16(c.modulation) : Tensor();
  auto value_r = [&](int64_t row) { return round_bf16(ops::ada_value(row_of(table_r, mod_r, row))); };
  const Tensor xr = round_bf16(c.x), yr = round_bf16(c.y);
  const Tensor normed = round_bf16(ops::rms_norm(xr, Tensor(), eps));
  const Tensor naive_mod =
      round_bf16(ops::add(round_bf16(ops::mul(normed, round_bf16(ops::add(value_r(1), 1.f)))), value_r(3)));
  const Tensor naive_gated = round_bf16(ops::add(xr, round_bf16(ops::mul(yr, value_r(5)))));

  for (DType dtype : {DType::BF16, DType::F32}) {
    const Tensor table = to_gpu(c.table, dtype), modulation = maybe(c.modulation, dtype);
    const Tensor x = to_gpu(c.x, dtype), y = to_gpu(c.y, dtype);
    const Tensor got_mod =
        ops::rms_norm_modulate(x, row_of(table, modulation, 3), row_of(table, modulation, 1), eps);
    const Tensor got_gated = ops::add_gated(x, y, row_of(table, modulation, 5));
    REQUIRE(got_mod.dtype() == dtype);
    REQUIRE(got_gated.dtype() == dtype);
    REQUIRE(got_mod.shape() == c.x.shape());
    if (dtype == DType::BF16) {
      test::require_bf16_close(std::string(what) + " rms_norm_modulate bf16", got_mod, naive_mod, ref_mod);
      test::require_bf16_close(std::string(what) + " add_gated bf16", got_gated, naive_gated, ref_gated);
    } else {
      test::require_f32_close(std::string(what) + " rms_norm_modulate f32", got_mod, ref_mod, 1e-5);
      test::require_f32_close(std::string(what) + " add_gated f32", got_gated, ref_gated, 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("gpu: fused AdaLN ops with per-token rows (packed widths)") {
  check_case(make_case(2, 33, 33, 256, true, 10), "per-token D256");
  check_case(make_case(1, 5, 5, 2048, true, 20), "per-token D2048");
}

TEST_CASE("gpu: fused AdaLN ops with per-sample rows, table rows alone, and an unpacked width") {
  check_case(make_case(2, 17, 1, 128, true, 30), "per-sample");
  check_case(make_case(2, 9, 1, 64, false, 40), "table only");
  check_case(make_case(2, 11, 11, 37, true, 50), "per-token D37");
}

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
