// CPU transposed 1-D convolution, gathered per output row: each (batch, output channel) row is
// one task, so no two threads write the same element.
#include <algorithm>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
// Below this many multiply-adds a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 21;
}  // namespace

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose1dOptions& opt) {
  if (any_bf16({&x, &w, &bias}))
    return cpu::conv_transpose1d(widen(x), widen(w), widen(bias), opt).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && w.dtype() == DType::F32,
             "conv_transpose1d: f32 expected, got {} and {}", x.str(), w.str());
  const ConvTranspose1dShape shape = conv_transpose1d_shape(x, w, bias, opt);
  const int64_t B = shape.batch, Cin = shape.in_channels, L = shape.length, Og = shape.out_per_group,
                K = shape.kernel, Cout = shape.out_channels, Lout = shape.out_length;

  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = Tensor::empty({B, Cout, Lout});
  const float* xp = xc.data<float>();
  const float* wp = wc.data<float>();
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* yp = y.data<float>();
  const int64_t in_per_group = Cin / opt.groups, stride = opt.stride;

#pragma omp parallel for collapse(2) schedule(static) if (B * Cout * L * in_per_group * K > kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t o = 0; o < Cout; ++o) {
      float* out = yp + (b * Cout + o) * Lout;
      std::fill(out, out + Lout, bp ? bp[o] : 0.f);
      const int64_t g = o / Og, o_local = o % Og;
      for (int64_t i = g * in_per_group; i < (g + 1) * in_per_group; ++i) {
        const float* in = xp + (b * Cin + i) * L;
        const float* taps = wp + (i * Og + o_local) * K;
        for (int64_t k = 0; k < K; ++k) {
          // Input t lands on output t * stride + shift; keep that inside [0, Lout).
          const int64_t shift = k - opt.padding;
          const int64_t t0 = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
          const int64_t t1 = std::min(L, Lout - shift <= 0 ? 0 : (Lout - shift - 1) / stride + 1);
          const float tap = taps[k];
          for (int64_t t = t0; t < t1; ++t) out[t * stride + shift] += tap * in[t];
        }
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
