// CPU border padding of one dimension: the tensor is viewed as [outer, L, inner] and every output
// row along the padded dimension copies the source row its mode maps it to.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/shape.h"

namespace ltx2::ops::cpu {

namespace {
// Source index of output index i (i in [-before, L + after)) along a dimension of length L.
int64_t source_index(int64_t i, int64_t L, PadMode mode) {
  switch (mode) {
    case PadMode::Reflect:
      if (i < 0) return -i;
      if (i >= L) return 2 * (L - 1) - i;
      return i;
    case PadMode::Replicate: return std::clamp<int64_t>(i, 0, L - 1);
    case PadMode::Circular: return ((i % L) + L) % L;
    case PadMode::Zeros: break;
  }
  return i;
}
}  // namespace

Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, PadMode mode) {
  if (mode == PadMode::Zeros) return pad(x, dim, before, after, 0.f);
  if (any_bf16({&x})) return cpu::edge_pad(widen(x), dim, before, after, mode).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32, "edge_pad: f32 expected, got {}", x.str());
  if (dim < 0) dim += x.dim();
  LTX2_CHECK(dim >= 0 && dim < x.dim(), "edge_pad: dim out of range for {}", x.str());
  const int64_t L = x.size(dim);
  LTX2_CHECK(before >= 0 && after >= 0 && L > 0, "edge_pad: pads {}/{} on {}", before, after, x.str());
  if (mode == PadMode::Reflect)
    LTX2_CHECK(before < L && after < L, "edge_pad: reflect pad {}/{} needs more than {} samples", before,
               after, L);
  if (mode == PadMode::Circular)
    LTX2_CHECK(before <= L && after <= L, "edge_pad: circular pad {}/{} exceeds {} samples", before, after,
               L);
  Tensor xc = x.contiguous();
  Shape out_shape = x.shape();
  out_shape[dim] = L + before + after;
  Tensor y = Tensor::empty(out_shape);
  int64_t inner = 1, outer = 1;
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  for (int d = 0; d < dim; ++d) outer *= x.size(d);
  const int64_t Lo = out_shape[dim];
  const float* src = xc.data<float>();
  float* dst = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static) if (outer * Lo * inner > 65536)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < Lo; ++i) {
      const int64_t s = source_index(i - before, L, mode);
      std::memcpy(dst + (o * Lo + i) * inner, src + (o * L + s) * inner,
                  static_cast<size_t>(inner) * sizeof(float));
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
