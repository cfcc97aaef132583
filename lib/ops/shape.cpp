// Concatenation and constant padding (any device: built from views and copy_).
#include "ops/shape.h"

#include "core/error.h"

namespace ltx2::ops {

Tensor cat(const std::vector<Tensor>& parts, int dim) {
  LTX2_CHECK(!parts.empty(), "cat of nothing");
  const Tensor& first = parts[0];
  int d = dim < 0 ? dim + first.dim() : dim;
  LTX2_CHECK(d >= 0 && d < first.dim(), "cat: dimension {} of {}", dim, first.str());
  Shape shape = first.shape();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    LTX2_CHECK(p.dim() == first.dim() && p.dtype() == first.dtype() && p.device() == first.device(),
               "cat: {} does not match {}", p.str(), first.str());
    for (int i = 0; i < p.dim(); ++i)
      LTX2_CHECK(i == d || p.size(i) == first.size(i), "cat: {} does not match {} outside dim {}",
                 p.str(), first.str(), d);
    total += p.size(d);
  }
  shape[d] = total;
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (const Tensor& p : parts) {
    if (p.size(d)) out.narrow(d, at, p.size(d)).copy_(p);
    at += p.size(d);
  }
  return out;
}

Tensor pad(const Tensor& x, int dim, int64_t before, int64_t after, float value) {
  int d = dim < 0 ? dim + x.dim() : dim;
  LTX2_CHECK(d >= 0 && d < x.dim() && before >= 0 && after >= 0, "pad: bad arguments for {}", x.str());
  Shape shape = x.shape();
  shape[d] += before + after;
  // Zeros are set on the device itself; another value is filled on the host and copied over.
  Tensor out = value == 0.f ? Tensor::zeros(shape, x.dtype(), x.device())
                            : Tensor::full(shape, value, x.dtype(), x.device());
  out.narrow(d, before, x.size(d)).copy_(x);
  return out;
}

}  // namespace ltx2::ops
