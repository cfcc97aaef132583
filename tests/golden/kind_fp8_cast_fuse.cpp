// Check runner for "fp8_cast_stochastic_fuse" cases: the reference's fp8-cast LoRA fuse of an
// F8_E4M3 weight (in.weight, its codes as int64) and a bf16 delta (in.delta): on CUDA its Triton
// kernel with seed 0 (out.stochastic_bf16, then cast: out.stochastic), elsewhere the bf16 add then
// the cast (out.deterministic). Compared bit for bit (values as float32).
#include <cstring>

#include "core/error.h"
#include "golden/kinds.h"
#include "models/transformer/weights.h"
#include "ops/elementwise.h"
#include "ops/stochastic_round.h"

namespace ltx2::golden {
namespace {

Tensor f8e4m3_from_codes(const Tensor& codes) {
  const std::vector<float> v = codes.to(DType::F32).to_vector();
  Tensor out = Tensor::empty(codes.shape(), DType::F8E4M3);
  auto* p = static_cast<uint8_t*>(out.data_ptr());
  for (size_t i = 0; i < v.size(); ++i) {
    LTX2_CHECK(v[i] >= 0 && v[i] <= 255, "fp8_cast_stochastic_fuse: in.weight holds {} (not a byte)", v[i]);
    p[i] = static_cast<uint8_t>(v[i]);
  }
  return out;
}

void run_fp8_cast_fuse(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  const Tensor weight = f8e4m3_from_codes(c.tensor("in.weight"));
  const Tensor delta = c.tensor("in.delta").to(DType::BF16);  // bf16 values stored as float32: exact
  const Tensor fused = ops::fp8_cast_fuse_stochastic(weight, delta, 0);
  report.check("out.stochastic_bf16", fused.to(DType::F32), c.tensor("out.stochastic_bf16"), tol);
  report.check("out.stochastic", fused.to(DType::F8E4M3).to(DType::F32), c.tensor("out.stochastic"), tol);
  const Tensor deterministic = models::transformer::round_to_f8e4m3(
      ops::add(delta.to(DType::F32), weight.to(DType::F32)).to(DType::BF16));
  report.check("out.deterministic", deterministic.to(DType::F32), c.tensor("out.deterministic"), tol);
}

const bool registered = register_kind_runner("fp8_cast_stochastic_fuse", &run_fp8_cast_fuse);

}  // namespace
}  // namespace ltx2::golden
