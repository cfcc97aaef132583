// CPU 1-D convolution: one (batch, output channel) row per task; each tap adds a scaled input row
// into it (a contiguous axpy when stride is 1), so no padded copy of the input is made.
#include <algorithm>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {
// Below this many multiply-adds a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 21;
}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& opt) {
  if (any_bf16({&x, &w, &bias})) return cpu::conv1d(widen(x), widen(w), widen(bias), opt).to(x.dtype());
  LTX2_CHECK(x.dtype() == DType::F32 && w.dtype() == DType::F32, "conv1d: f32 expected, got {} and {}",
             x.str(), w.str());
  LTX2_CHECK(
      opt.stride >= 1 && opt.dilation >= 1 && opt.groups >= 1 && opt.pad_left >= 0 && opt.pad_right >= 0,
      "conv1d: bad options (stride {}, dilation {}, groups {}, padding {}/{})", opt.stride, opt.dilation,
      opt.groups, opt.pad_left, opt.pad_right);
  LTX2_CHECK(x.dim() == 3 && w.dim() == 3, "conv1d: input {} and weight {} must be 3-d", x.str(), w.str());
  const int64_t B = x.size(0), Cin = x.size(1), L = x.size(2);
  const int64_t Cout = w.size(0), Cg = w.size(1), K = w.size(2);
  LTX2_CHECK(Cin % opt.groups == 0 && Cout % opt.groups == 0 && Cg == Cin / opt.groups,
             "conv1d: weight {} does not fit input {} with {} groups", w.str(), x.str(), opt.groups);
  if (bias.defined())
    LTX2_CHECK(bias.numel() == Cout, "conv1d: bias {} for {} output channels", bias.str(), Cout);
  const int64_t Lout = conv1d_output_length(L, K, opt);
  LTX2_CHECK(Lout > 0, "conv1d: input {} is shorter than the kernel {}", x.str(), w.str());

  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = Tensor::empty({B, Cout, Lout});
  const float* xp = xc.data<float>();
  const float* wp = wc.data<float>();
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* yp = y.data<float>();
  const int64_t out_per_group = Cout / opt.groups, stride = opt.stride;

#pragma omp parallel for collapse(2) schedule(static) if (B * Cout * Lout * Cg * K > kParallelWork)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t o = 0; o < Cout; ++o) {
      float* out = yp + (b * Cout + o) * Lout;
      std::fill(out, out + Lout, bp ? bp[o] : 0.f);
      const int64_t first_in = (o / out_per_group) * Cg;
      for (int64_t i = 0; i < Cg; ++i) {
        const float* in = xp + (b * Cin + first_in + i) * L;
        const float* taps = wp + (o * Cg + i) * K;
        for (int64_t k = 0; k < K; ++k) {
          // Output t reads input t * stride + shift; keep that inside [0, L).
          const int64_t shift = k * opt.dilation - opt.pad_left;
          const int64_t t0 = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
          const int64_t t1 = std::min(Lout, L - shift <= 0 ? 0 : (L - shift - 1) / stride + 1);
          const float tap = taps[k];
          if (stride == 1) {
            const float* src = in + shift;
#pragma omp simd
            for (int64_t t = t0; t < t1; ++t) out[t] += tap * src[t];
          } else {
            for (int64_t t = t0; t < t1; ++t) out[t] += tap * in[t * stride + shift];
          }
        }
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
