// CUDA softmax over the last dimension: one block per row, max-subtracted, float32 arithmetic,
// output in the input's dtype.
#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

template <typename T>
__global__ void softmax_kernel(T* out, const T* x, int64_t L) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * L;
  T* orow = out + blockIdx.x * L;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) m = fmaxf(m, to_f(row[i]));
  m = block_reduce(
      m, scratch, [](float v) { return warp_max(v); }, -INFINITY);
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) s += __expf(to_f(row[i]) - m);
  float inv = 1.f / block_reduce(
                        s, scratch, [](float v) { return warp_sum(v); }, 0.f);
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) orow[i] = from_f<T>(__expf(to_f(row[i]) - m) * inv);
}

}  // namespace

Tensor softmax(const Tensor& x) {
  LTX2_CHECK(x.dim() >= 1, "softmax: input {} has no last dimension", x.str());
  use_device(x);
  Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  int64_t L = x.size(-1), rows = L ? x.numel() / L : 0;
  if (rows == 0) return out;
  int threads = L >= 1024 ? 512 : 128;
  dispatch_float(x.dtype(), "softmax", [&](auto t) {
    using T = decltype(t);
    softmax_kernel<T><<<static_cast<unsigned>(rows), threads>>>(static_cast<T*>(out.data_ptr()),
                                                                static_cast<const T*>(xc.data_ptr()), L);
    check_launch();
  });
  return out;
}

}  // namespace ltx2::cuda
