// CUDA nearest-neighbour 2-D upsampling of [B, C, H, W] by an integer factor
// (ops/upsample_nearest.h): one thread per output element copies its source. Values are moved,
// not converted, so any 2- or 4-byte dtype works; the output keeps the input's dtype.
#include <cstdint>

#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void upsample_nearest2d_kernel(T* y, const T* x, int64_t H, int64_t W, int64_t factor,
                                          int64_t total) {
  const int64_t Ho = H * factor, Wo = W * factor;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t w = idx % Wo, rest = idx / Wo;
    const int64_t h = rest % Ho, plane = rest / Ho;
    y[idx] = x[(plane * H + h / factor) * W + w / factor];
  }
}

}  // namespace

Tensor upsample_nearest2d(const Tensor& x, int64_t factor) {
  LTX2_CHECK(x.dim() == 4, "upsample_nearest2d: [B, C, H, W] expected, got {}", x.str());
  LTX2_CHECK(factor >= 1, "upsample_nearest2d: factor {} must be at least 1", factor);
  const size_t elt = dtype_size(x.dtype());
  LTX2_CHECK(elt == 2 || elt == 4, "upsample_nearest2d: CUDA path takes 2- or 4-byte elements, got {}",
             x.str());
  use_device(x);
  const int64_t H = x.size(2), W = x.size(3);
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty({x.size(0), x.size(1), H * factor, W * factor}, x.dtype(), x.device());
  const int64_t total = y.numel();
  if (total == 0) return y;
  if (elt == 2)
    upsample_nearest2d_kernel<uint16_t><<<grid_for(total, kThreads), kThreads>>>(
        static_cast<uint16_t*>(y.data_ptr()), static_cast<const uint16_t*>(xc.data_ptr()), H, W, factor,
        total);
  else
    upsample_nearest2d_kernel<uint32_t><<<grid_for(total, kThreads), kThreads>>>(
        static_cast<uint32_t*>(y.data_ptr()), static_cast<const uint32_t*>(xc.data_ptr()), H, W, factor,
        total);
  check_launch();
  return y;
}

}  // namespace ltx2::cuda
