// Helpers shared by the check runners of traced models (video VAE, upsampler): the case's fp32
// tolerance, and the comparison of every mid.* tensor of a case with the intermediates a model
// reported through its trace (4-d per-frame fixtures [(B*F), C, H, W] are matched against our 5-d
// [B, C, F, H, W] by folding frames into the batch).
#pragma once

#include <map>
#include <string>

#include "golden/compare.h"
#include "golden/golden_case.h"

namespace ltx2::golden {

// spec["tolerance"]["fp32_reference_vs_fp32_impl"].
Tolerance fp32_tolerance(const GoldenCase& c);

class TracedTensors {
 public:
  void record(const std::string& name, const Tensor& value) { values_[name] = value; }
  // Checks every mid.<name> of the case against the recorded <name>; a missing one fails.
  void check_mids(const GoldenCase& c, Report& report, const Tolerance& tol) const;

 private:
  std::map<std::string, Tensor> values_;
};

}  // namespace ltx2::golden
