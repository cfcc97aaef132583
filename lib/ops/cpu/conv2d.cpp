// CPU 2-D convolution: the input is zero padded once, then each (batch, output channel) plane is
// one task that adds every tap's shifted input rows into it (contiguous axpys along W).
#include <algorithm>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/shape.h"

namespace ltx2::ops::cpu {

namespace {
// Below this many multiply-adds a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 21;
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dPadding& padding) {
  if (any_bf16({&x, &w, &bias})) return cpu::conv2d(widen(x), widen(w), widen(bias), padding).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && w.dtype() == DType::F32, "conv2d: f32 expected, got {} and {}",
             x.str(), w.str());
  LTX2_CHECK(padding.top >= 0 && padding.bottom >= 0 && padding.left >= 0 && padding.right >= 0,
             "conv2d: negative padding");
  LTX2_CHECK(x.dim() == 4 && w.dim() == 4 && w.size(1) == x.size(1),
             "conv2d: weight {} does not fit input {}", w.str(), x.str());
  const int64_t Cout = w.size(0), kH = w.size(2), kW = w.size(3);
  if (bias.defined())
    LTX2_CHECK(bias.numel() == Cout, "conv2d: bias {} for {} output channels", bias.str(), Cout);
  Tensor xp = pad(pad(x, 2, padding.top, padding.bottom), 3, padding.left, padding.right);
  const int64_t B = xp.size(0), Cin = xp.size(1), Hp = xp.size(2), Wp = xp.size(3);
  const int64_t Hout = Hp - kH + 1, Wout = Wp - kW + 1;
  LTX2_CHECK(Hout > 0 && Wout > 0, "conv2d: input {} (padded) is smaller than the kernel {}", x.str(),
             w.str());

  Tensor wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = Tensor::empty({B, Cout, Hout, Wout});
  const float* in = xp.data<float>();
  const float* wt = wc.data<float>();
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* yp = y.data<float>();

#pragma omp parallel for collapse(2) \
    schedule(static) if (B * Cout * Hout * Wout * Cin * kH * kW > kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t o = 0; o < Cout; ++o) {
      float* out = yp + (b * Cout + o) * Hout * Wout;
      std::fill(out, out + Hout * Wout, bp ? bp[o] : 0.f);
      for (int64_t i = 0; i < Cin; ++i) {
        const float* plane = in + (b * Cin + i) * Hp * Wp;
        const float* taps = wt + (o * Cin + i) * kH * kW;
        for (int64_t p = 0; p < kH; ++p) {
          for (int64_t q = 0; q < kW; ++q) {
            const float tap = taps[p * kW + q];
            for (int64_t h = 0; h < Hout; ++h) {
              const float* src = plane + (h + p) * Wp + q;
              float* dst = out + h * Wout;
#pragma omp simd
              for (int64_t c = 0; c < Wout; ++c) dst[c] += tap * src[c];
            }
          }
        }
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
