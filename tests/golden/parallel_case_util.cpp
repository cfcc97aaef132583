// Integer-exact comparison and small tensor builders for the multi-GPU check runners.
#include "golden/parallel_case_util.h"

#include <cmath>

#include "core/error.h"

namespace ltx2::golden {

void check_exact_i64(Report& report, const std::string& name, const Tensor& got, const Tensor& expected) {
  CompareRow row;
  row.name = name;
  if (got.shape() != expected.shape()) {
    row.note = "shape " + shape_str(got.shape()) + " != expected " + shape_str(expected.shape());
    report.add(row);
    return;
  }
  std::vector<int64_t> g = got.to_vector_i64(), e = expected.to_vector_i64();
  row.pass = true;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] == e[i]) continue;
    double d = std::fabs(static_cast<double>(g[i] - e[i]));
    if (row.pass) row.note = "first mismatch at element " + std::to_string(i);
    row.pass = false;
    row.max_abs = std::max(row.max_abs, d);
    row.max_rel = std::max(row.max_rel, d / std::max(std::fabs(static_cast<double>(e[i])), 1.0));
  }
  report.add(row);
}

void check_output(const GoldenCase& c, Report& report, const std::string& name, const Tensor& got,
                  const Tolerance& tol) {
  const std::string key = "out." + name;
  if (!c.has(key)) {
    report.fail(key, "expected tensor missing from the case");
    return;
  }
  Tensor expected = c.tensor(key);
  if (expected.dtype() == DType::I64 && got.dtype() == DType::I64)
    check_exact_i64(report, key, got, expected);
  else
    report.check(key, got, expected, tol);
}

Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector_i64(values, shape);
}

Tensor f32_tensor(const std::vector<float>& values) {
  return Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
}

Tolerance tolerance_for(const GoldenCase& c, const std::string& key, const Tolerance& fallback) {
  auto it = c.spec().find("tolerance");
  if (it == c.spec().end()) return fallback;
  if (!it->is_object()) return parse_tolerance(*it);
  auto entry = it->find(key);
  return entry == it->end() ? fallback : parse_tolerance(*entry);
}

parallel::TokenSequence read_token_sequence(const GoldenCase& c, const std::string& prefix) {
  parallel::TokenSequence seq;
  seq.latent = c.tensor(prefix + "latent");
  seq.timesteps = c.tensor(prefix + "timesteps");
  seq.positions = c.tensor(prefix + "positions");
  if (c.has(prefix + "keyframes_mask")) seq.keyframes_mask = c.tensor(prefix + "keyframes_mask");
  if (c.has(prefix + "attention_mask")) seq.attention_mask = c.tensor(prefix + "attention_mask");
  return seq;
}

}  // namespace ltx2::golden
