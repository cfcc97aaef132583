// conv_transpose1d (ops/conv_transpose1d.h): dispatch to the CUDA table or the CPU kernel, and the
// checks and sizes both backends use.
#include "ops/conv_transpose1d.h"

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

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
  return cpu::conv_transpose1d(x, w, bias, opt);
}

}  // namespace ltx2::ops
