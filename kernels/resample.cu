// CUDA filtered resampling of [B, C, L] signals (ops/resample1d.h): one thread per output sample
// reads the replicate-padded input through a clamped index (no padded copy) and sums its filter
// taps in the CPU op's order with float32 accumulation. Output dtype = input dtype; the filter may
// be f32 or bf16.
#include <algorithm>

#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ int64_t clamp_index(int64_t i, int64_t length) {
  return i < 0 ? 0 : (i >= length ? length - 1 : i);
}

// Output j of the cropped result is sample crop_left + j of the full transposed convolution of the
// padded row: the padded samples t with 0 <= (crop_left + j) - t * ratio < K contribute.
template <typename T, typename TF>
__global__ void upsample1d_kernel(T* y, const T* x, const TF* h, int64_t total, int64_t L, int64_t Lout,
                                  int64_t K, int64_t ratio, int64_t pad, int64_t crop_left, float gain) {
  const int64_t padded = L + 2 * pad;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = idx / Lout, full = crop_left + idx % Lout;
    const T* src = x + row * L;
    const int64_t first = full - K + 1 <= 0 ? 0 : (full - K + ratio) / ratio;
    const int64_t last = min(full / ratio, padded - 1);
    float acc = 0.f;
    for (int64_t t = first; t <= last; ++t)
      acc += to_f(src[clamp_index(t - pad, L)]) * to_f(h[full - t * ratio]);
    y[idx] = from_f<T>(gain * acc);
  }
}

template <typename T, typename TF>
__global__ void downsample1d_kernel(T* y, const T* x, const TF* h, int64_t total, int64_t L, int64_t Lout,
                                    int64_t K, int64_t stride, int64_t pad_left) {
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = idx / Lout, start = (idx % Lout) * stride - pad_left;
    const T* src = x + row * L;
    float acc = 0.f;
    for (int64_t k = 0; k < K; ++k) acc += to_f(src[clamp_index(start + k, L)]) * to_f(h[k]);
    y[idx] = from_f<T>(acc);
  }
}

void check_inputs(const Tensor& x, const Tensor& filter, const char* op) {
  LTX2_CHECK(x.dim() == 3 && x.size(2) > 0, "{}: input {} must be [B, C, L] with L > 0", op, x.str());
  LTX2_CHECK(filter.numel() > 0 && filter.device() == x.device(), "{}: filter {} for input {}", op,
             filter.str(), x.str());
}

}  // namespace

Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right) {
  check_inputs(x, filter, "upsample1d");
  LTX2_CHECK(ratio >= 1 && pad >= 0 && crop_left >= 0 && crop_right >= 0,
             "upsample1d: bad arguments (ratio {}, pad {}, crop {}/{})", ratio, pad, crop_left, crop_right);
  const int64_t L = x.size(2), K = filter.numel();
  const int64_t Lout = (L + 2 * pad - 1) * ratio + K - crop_left - crop_right;
  LTX2_CHECK(Lout > 0, "upsample1d: cropping {}+{} leaves nothing of {}", crop_left, crop_right, x.str());
  use_device(x);
  Tensor xc = x.contiguous(), hc = filter.contiguous();
  Tensor y = Tensor::empty({x.size(0), x.size(1), Lout}, x.dtype(), x.device());
  const int64_t total = y.numel();
  if (total == 0) return y;
  dispatch_float(x.dtype(), "upsample1d", [&](auto t) {
    using T = decltype(t);
    dispatch_float(filter.dtype(), "upsample1d filter", [&](auto tf) {
      using TF = decltype(tf);
      upsample1d_kernel<T, TF><<<grid_for(total, kThreads), kThreads>>>(
          static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()),
          static_cast<const TF*>(hc.data_ptr()), total, L, Lout, K, ratio, pad, crop_left,
          static_cast<float>(ratio));
      check_launch();
    });
  });
  return y;
}

Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right) {
  check_inputs(x, filter, "lowpass_downsample1d");
  LTX2_CHECK(stride >= 1 && pad_left >= 0 && pad_right >= 0,
             "lowpass_downsample1d: bad arguments (stride {}, pads {}/{})", stride, pad_left, pad_right);
  const int64_t L = x.size(2), K = filter.numel(), padded = L + pad_left + pad_right;
  LTX2_CHECK(padded >= K, "lowpass_downsample1d: input {} is shorter than the filter", x.str());
  const int64_t Lout = (padded - K) / stride + 1;
  use_device(x);
  Tensor xc = x.contiguous(), hc = filter.contiguous();
  Tensor y = Tensor::empty({x.size(0), x.size(1), Lout}, x.dtype(), x.device());
  const int64_t total = y.numel();
  if (total == 0) return y;
  dispatch_float(x.dtype(), "lowpass_downsample1d", [&](auto t) {
    using T = decltype(t);
    dispatch_float(filter.dtype(), "lowpass_downsample1d filter", [&](auto tf) {
      using TF = decltype(tf);
      downsample1d_kernel<T, TF><<<grid_for(total, kThreads), kThreads>>>(
          static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()),
          static_cast<const TF*>(hc.data_ptr()), total, L, Lout, K, stride, pad_left);
      check_launch();
    });
  });
  return y;
}

}  // namespace ltx2::cuda
