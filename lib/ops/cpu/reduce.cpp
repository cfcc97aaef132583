// CPU reductions over one dimension and the last-dimension softmax, float32 in and out.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

Tensor reduce(const Tensor& x, int dim, bool keepdim, ReduceOp op) {
  if (any_bf16({&x})) return cpu::reduce(widen(x), dim, keepdim, op).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32, "reduce: f32 expected, got {}", x.str());
  int d = dim < 0 ? dim + x.dim() : dim;
  LTX2_CHECK(d >= 0 && d < x.dim(), "reduce: dimension {} of {}", dim, x.str());
  // Move the reduced dimension last: rows of length L.
  std::vector<int> order;
  for (int i = 0; i < x.dim(); ++i)
    if (i != d) order.push_back(i);
  order.push_back(d);
  Tensor xc = x.permute(order).contiguous();
  int64_t L = x.size(d), rows = L ? x.numel() / L : 0;
  Shape out_shape = x.shape();
  if (keepdim) out_shape[d] = 1; else out_shape.erase(out_shape.begin() + d);
  if (!L) rows = shape_numel(out_shape);
  Tensor out = Tensor::empty(out_shape);
  const float* in = xc.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for schedule(static) if (rows * L > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * L;
    if (op == ReduceOp::Sum || op == ReduceOp::Mean) {
      double s = 0;
      for (int64_t i = 0; i < L; ++i) s += row[i];
      o[r] = static_cast<float>(op == ReduceOp::Mean ? s / static_cast<double>(L) : s);
    } else {
      float m = op == ReduceOp::Max ? -std::numeric_limits<float>::infinity()
                                    : std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < L; ++i) m = op == ReduceOp::Max ? std::max(m, row[i]) : std::min(m, row[i]);
      o[r] = m;
    }
  }
  return out;
}

Tensor softmax(const Tensor& x) {
  LTX2_CHECK(x.dtype() == DType::F32 && x.dim() >= 1, "softmax: f32 tensor expected, got {}", x.str());
  Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(x.shape());
  int64_t L = x.size(-1), rows = L ? x.numel() / L : 0;
  const float* in = xc.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for schedule(static) if (rows * L > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * L;
    float* orow = o + r * L;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < L; ++i) m = std::max(m, row[i]);
    float s = 0.f;
    for (int64_t i = 0; i < L; ++i) {
      orow[i] = std::exp(row[i] - m);
      s += orow[i];
    }
    for (int64_t i = 0; i < L; ++i) orow[i] /= s;
  }
  return out;
}

}  // namespace ltx2::ops::cpu
