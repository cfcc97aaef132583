// CPU transposed 1-D convolution, gathered per output row: each (batch, output channel) row is
// one task, so no two threads write the same element.
#include "ops/conv_transpose1d.h"

#include <algorithm>

#include "core/error.h"
#include "ops/cpu/bf16_widening.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

namespace {
// Below this many multiply-adds a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 21;
}  // namespace

ConvTranspose1dShape conv_transpose1d_shape(const Tensor& x, const Tensor& w, const Tensor& bias,
                                            const ConvTranspose1dOptions& opt) {
  LTX2_CHECK(opt.stride >= 1 && opt.groups >= 1 && opt.padding >= 0,
             "conv_transpose1d: bad options (stride {}, padding {}, groups {})", opt.stride, opt.padding,
             opt.groups);
  LTX2_CHECK(x.dim() == 3 && w.dim() == 3, "conv_transpose1d: input {} and weight {} must be 3-d", x.str(),
             w.str());
  ConvTranspose1dShape s{x.size(0), x.size(1), x.size(2), w.size(1), w.size(2), w.size(1) * opt.groups, 0};
  LTX2_CHECK(w.size(0) == s.in_channels && s.in_channels % opt.groups == 0,
             "conv_transpose1d: weight {} does not fit input {} with {} groups", w.str(), x.str(),
             opt.groups);
  if (bias.defined())
    LTX2_CHECK(bias.numel() == s.out_channels, "conv_transpose1d: bias {} for {} output channels", bias.str(),
               s.out_channels);
  s.out_length = (s.length - 1) * opt.stride + s.kernel - 2 * opt.padding;
  LTX2_CHECK(s.out_length > 0, "conv_transpose1d: padding {} leaves no output for {}", opt.padding, x.str());
  return s;
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ConvTranspose1dOptions& opt) {
  LTX2_DISPATCH_CUDA(x.device(), conv_transpose1d, x, w, bias, opt);
  if (cpu::any_bf16({&x, &w, &bias}))
    return conv_transpose1d(cpu::widen(x), cpu::widen(w), cpu::widen(bias), opt).to(x.dtype());
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

}  // namespace ltx2::ops
