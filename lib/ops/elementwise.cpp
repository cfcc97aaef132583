// The elementwise ops (ops/elementwise.h): dispatch to the CUDA table or the CPU kernels, and the
// broadcast rule both backends use.
#include "ops/elementwise.h"

#include <algorithm>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    LTX2_CHECK(da == db || da == 1 || db == 1, "shapes {} and {} do not broadcast", shape_str(a),
               shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op) {
  LTX2_DISPATCH_CUDA(a.device(), binary, a, b, static_cast<int>(op));
  return cpu::binary(a, b, op);
}

Tensor unary(const Tensor& x, UnaryOp op, float alpha) {
  LTX2_DISPATCH_CUDA(x.device(), unary, x, static_cast<int>(op), alpha);
  return cpu::unary(x, op, alpha);
}

}  // namespace ltx2::ops
