// Tolerance lookup and mid.* comparison for traced check runners.
#include "golden/traced_tensors.h"

#include "core/error.h"

namespace ltx2::golden {

Tolerance fp32_tolerance(const GoldenCase& c) {
  const auto& spec = c.spec();
  LTX2_CHECK(spec.contains("tolerance") && spec["tolerance"].contains("fp32_reference_vs_fp32_impl"),
             "{}: case.json has no tolerance.fp32_reference_vs_fp32_impl", c.dir());
  return parse_tolerance(spec["tolerance"]["fp32_reference_vs_fp32_impl"]);
}

void TracedTensors::check_mids(const GoldenCase& c, Report& report, const Tolerance& tol) const {
  for (const std::string& name : c.names("mid.")) {
    auto it = values_.find(name.substr(4));
    if (it == values_.end()) {
      report.fail(name, "the implementation reports no such intermediate");
      continue;
    }
    Tensor expected = c.tensor(name), got = it->second;
    if (expected.dim() == 4 && got.dim() == 5) {
      got = got.permute({0, 2, 1, 3, 4}).contiguous();
      got = got.view({got.size(0) * got.size(1), got.size(2), got.size(3), got.size(4)});
    }
    report.check(name, got, expected, tol);
  }
}

}  // namespace ltx2::golden
