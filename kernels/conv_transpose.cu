// CUDA transposed 1-D convolution (the vocoders' upsampling layers), a direct gather kernel: one
// thread per output sample sums, over its group's input channels, the taps k with
// t + padding - k a multiple of the stride (K / stride of them), in the CPU op's order (bias, then
// channels, then taps) with float32 accumulation. Output dtype = input dtype; the weight and bias
// may be f32 or bf16 independently of the input.
#include "kernels/common.cuh"
#include "ops/conv_transpose1d.h"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

struct TransposeGeometry {
  int64_t in_channels, length, out_channels, out_length;
  int64_t out_per_group, in_per_group, kernel, stride, padding;
};

template <typename T, typename TW, typename TB>
__global__ void conv_transpose1d_kernel(T* y, const T* x, const TW* w, const TB* bias, TransposeGeometry g,
                                        int64_t total) {
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = idx % g.out_length, rest = idx / g.out_length;
    const int64_t o = rest % g.out_channels, b = rest / g.out_channels;
    const int64_t group = o / g.out_per_group, o_local = o % g.out_per_group;
    const int64_t shifted = t + g.padding;  // input sample q lands here through tap shifted - q * stride
    float acc = bias ? to_f(bias[o]) : 0.f;
    for (int64_t i = group * g.in_per_group; i < (group + 1) * g.in_per_group; ++i) {
      const T* row = x + (b * g.in_channels + i) * g.length;
      const TW* taps = w + (i * g.out_per_group + o_local) * g.kernel;
      for (int64_t k = shifted % g.stride; k < g.kernel && k <= shifted; k += g.stride) {
        const int64_t q = (shifted - k) / g.stride;
        if (q < g.length) acc += to_f(taps[k]) * to_f(row[q]);
      }
    }
    y[idx] = from_f<T>(acc);
  }
}

}  // namespace

Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const ops::ConvTranspose1dOptions& opt) {
  LTX2_CHECK(w.device() == x.device() && (!bias.defined() || bias.device() == x.device()),
             "conv_transpose1d: input {}, weight {} and bias on different devices", x.str(), w.str());
  const ops::ConvTranspose1dShape shape = ops::conv_transpose1d_shape(x, w, bias, opt);
  const int64_t B = shape.batch, Cin = shape.in_channels, L = shape.length, Og = shape.out_per_group,
                K = shape.kernel, Cout = shape.out_channels, Lout = shape.out_length;
  use_device(x);
  Tensor y = Tensor::empty({B, Cout, Lout}, x.dtype(), x.device());
  const int64_t total = y.numel();
  if (total == 0) return y;
  Tensor xc = x.contiguous(), wc = w.contiguous(), bc = bias.defined() ? bias.contiguous() : Tensor();
  const TransposeGeometry g{Cin, L, Cout, Lout, Og, Cin / opt.groups, K, opt.stride, opt.padding};
  dispatch_float(x.dtype(), "conv_transpose1d", [&](auto t) {
    using T = decltype(t);
    dispatch_float(w.dtype(), "conv_transpose1d weight", [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(bc.defined() ? bc.dtype() : DType::F32, "conv_transpose1d bias", [&](auto tb) {
        using TB = decltype(tb);
        conv_transpose1d_kernel<T, TW, TB><<<grid_for(total, kThreads), kThreads>>>(
            static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()),
            static_cast<const TW*>(wc.data_ptr()),
            bc.defined() ? static_cast<const TB*>(bc.data_ptr()) : nullptr, g, total);
        check_launch();
      });
    });
  });
  return y;
}

}  // namespace ltx2::cuda
