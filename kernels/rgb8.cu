// CUDA decoded video -> 8-bit RGB frames (ops/rgb8.h): one thread per output pixel reads its three
// channel planes (consecutive threads, consecutive addresses) and writes the interleaved bytes.
// The scalar rule is the header's constexpr one, so the values equal the CPU op's exactly.
#include <cstdint>

#include "kernels/common.cuh"
#include "ops/rgb8.h"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void decoded_to_rgb8_kernel(uint8_t* out, const T* x, int64_t plane) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < plane;
       p += int64_t(gridDim.x) * blockDim.x) {
    uint8_t* o = out + 3 * p;
#pragma unroll
    for (int c = 0; c < 3; ++c) o[c] = ops::unit_to_u8(ops::from_vae_range(to_f(x[c * plane + p])));
  }
}

}  // namespace

Tensor decoded_to_rgb8(const Tensor& video) {
  LTX2_CHECK(video.dim() == 4 && video.size(0) == 3, "decoded_to_rgb8: [3, F, H, W] expected, got {}",
             video.str());
  use_device(video);
  const Tensor x = video.contiguous();
  const int64_t F = x.size(1), H = x.size(2), W = x.size(3), plane = F * H * W;
  Tensor out = Tensor::empty({F, H, W, 3}, DType::U8, x.device());
  if (plane == 0) return out;
  dispatch_float(x.dtype(), "decoded_to_rgb8", [&](auto t) {
    using T = decltype(t);
    decoded_to_rgb8_kernel<T><<<grid_for(plane, kThreads), kThreads>>>(
        static_cast<uint8_t*>(out.data_ptr()), static_cast<const T*>(x.data_ptr()), plane);
  });
  check_launch();
  return out;
}

}  // namespace ltx2::cuda
