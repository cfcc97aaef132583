// conv1d (ops/conv1d.h): dispatch to the CUDA table or the CPU kernel, and the output length both
// backends use.
#include "ops/conv1d.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

int64_t conv1d_output_length(int64_t length, int64_t kernel, const Conv1dOptions& opt) {
  int64_t span = opt.dilation * (kernel - 1) + 1;
  int64_t padded = length + opt.pad_left + opt.pad_right;
  return padded < span ? 0 : (padded - span) / opt.stride + 1;
}

Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dOptions& opt) {
  LTX2_DISPATCH_CUDA(x.device(), conv1d, x, w, bias, opt);
  return cpu::conv1d(x, w, bias, opt);
}

}  // namespace ltx2::ops
