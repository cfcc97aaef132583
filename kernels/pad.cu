// CUDA border padding of one dimension (ops/edge_pad.h), every mode including zeros: the tensor
// is viewed as [outer, L, inner] and each output element copies the source element its mode maps
// it to (zeros: none outside the input). Any dtype of 1, 2, 4 or 8 bytes: the values are moved,
// not converted.
#include <cstdint>

#include "kernels/common.cuh"
#include "ops/edge_pad.h"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

// Source index along the padded dimension, or -1 for a zero.
__device__ __forceinline__ int64_t source_index(int64_t i, int64_t L, int mode) {
  if (i >= 0 && i < L) return i;
  switch (mode) {
    case int(ops::PadMode::Reflect): return i < 0 ? -i : 2 * (L - 1) - i;
    case int(ops::PadMode::Replicate): return i < 0 ? 0 : L - 1;
    case int(ops::PadMode::Circular): return ((i % L) + L) % L;
    default: return -1;
  }
}

template <typename T>
__global__ void edge_pad_kernel(T* y, const T* x, int64_t L, int64_t Lo, int64_t inner, int64_t before,
                                int mode, int64_t total) {
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t in = idx % inner, rest = idx / inner;
    const int64_t i = rest % Lo, o = rest / Lo;
    const int64_t s = source_index(i - before, L, mode);
    y[idx] = s < 0 ? T{} : x[(o * L + s) * inner + in];
  }
}

template <typename T>
void launch(const Tensor& y, const Tensor& x, int64_t L, int64_t Lo, int64_t inner, int64_t before,
            int mode) {
  const int64_t total = y.numel();
  edge_pad_kernel<T><<<grid_for(total, kThreads), kThreads>>>(
      static_cast<T*>(y.data_ptr()), static_cast<const T*>(x.data_ptr()), L, Lo, inner, before, mode, total);
  check_launch();
}

}  // namespace

Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, int mode) {
  const auto pad_mode = static_cast<ops::PadMode>(mode);
  if (dim < 0) dim += x.dim();
  LTX2_CHECK(dim >= 0 && dim < x.dim(), "edge_pad: dim out of range for {}", x.str());
  const int64_t L = x.size(dim);
  LTX2_CHECK(before >= 0 && after >= 0 && (L > 0 || pad_mode == ops::PadMode::Zeros),
             "edge_pad: pads {}/{} on {}", before, after, x.str());
  if (pad_mode == ops::PadMode::Reflect)
    LTX2_CHECK(before < L && after < L, "edge_pad: reflect pad {}/{} needs more than {} samples", before,
               after, L);
  if (pad_mode == ops::PadMode::Circular)
    LTX2_CHECK(before <= L && after <= L, "edge_pad: circular pad {}/{} exceeds {} samples", before, after,
               L);
  use_device(x);
  Tensor xc = x.contiguous();
  Shape out_shape = x.shape();
  out_shape[dim] = L + before + after;
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  if (y.numel() == 0) return y;
  int64_t inner = 1;
  for (int d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t Lo = out_shape[dim];
  switch (dtype_size(x.dtype())) {
    case 1: launch<uint8_t>(y, xc, L, Lo, inner, before, mode); break;
    case 2: launch<uint16_t>(y, xc, L, Lo, inner, before, mode); break;
    case 4: launch<uint32_t>(y, xc, L, Lo, inner, before, mode); break;
    default: launch<uint64_t>(y, xc, L, Lo, inner, before, mode); break;
  }
  return y;
}

}  // namespace ltx2::cuda
