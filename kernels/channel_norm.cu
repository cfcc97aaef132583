// CUDA PixelNorm and GroupNorm over dim 1 of [B, C, ...] tensors, output in the input's dtype, the
// affine parameters f32 or bf16.
//
// PixelNorm: one thread per (b, position) walks the channels twice (sum of squares, then scale);
// neighbouring threads read neighbouring positions, so every pass is coalesced.
// GroupNorm: a (b, group) is C/groups * positions contiguous values, too many for one block, so
// it is split into `splits` slices. Pass 1 writes each slice's sum and sum of squares (float64,
// as the CPU op accumulates) to partials[(b, group)][slice][2]; pass 2 has every block reduce its
// group's partials in a fixed order (deterministic), form the CPU op's float mean and inverse
// deviation, and normalise its slice. Two launches, no host synchronisation.
#include <algorithm>

#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kSliceElements = 32768;  // values per GroupNorm block
constexpr int64_t kMaxSplits = 1024;

int64_t positions_of(const Tensor& x) {
  int64_t n = 1;
  for (int d = 2; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

template <typename T>
__global__ void pixel_norm_kernel(T* y, const T* x, int64_t C, int64_t N, int64_t total, float eps) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / N, p = i % N;
    const T* src = x + b * C * N + p;
    float ss = 0.f;
    for (int64_t c = 0; c < C; ++c) {
      const float v = to_f(src[c * N]);
      ss += v * v;
    }
    const float inv = 1.f / sqrtf(ss / static_cast<float>(C) + eps);
    T* dst = y + b * C * N + p;
    for (int64_t c = 0; c < C; ++c) dst[c * N] = from_f<T>(to_f(src[c * N]) * inv);
  }
}

// Sum of a double over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Grid (splits, B * groups): block (s, bg) sums slice s of group bg.
template <typename T>
__global__ void group_stats_kernel(double* partials, const T* x, int64_t span, int64_t slice) {
  __shared__ double scratch[32];
  const T* src = x + blockIdx.y * span;
  const int64_t begin = blockIdx.x * slice, end = std::min(span, begin + slice);
  double sum = 0, sq = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = to_f(src[i]);
    sum += v;
    sq += v * v;
  }
  sum = block_sum(sum, scratch);
  sq = block_sum(sq, scratch);
  if (threadIdx.x == 0) {
    double* out = partials + (int64_t(blockIdx.y) * gridDim.x + blockIdx.x) * 2;
    out[0] = sum;
    out[1] = sq;
  }
}

// Grid (splits, B * groups): block (s, bg) normalises slice s of group bg.
template <typename T, typename TW>
__global__ void group_apply_kernel(T* y, const T* x, const double* partials, const TW* w, const TW* b,
                                   int64_t groups, int64_t per_group, int64_t N, int64_t slice, float eps) {
  __shared__ double scratch[32];
  const int64_t bg = blockIdx.y, span = per_group * N;
  const double* part = partials + bg * gridDim.x * 2;
  double sum = 0, sq = 0;
  for (unsigned s = threadIdx.x; s < gridDim.x; s += blockDim.x) {
    sum += part[2 * s];
    sq += part[2 * s + 1];
  }
  sum = block_sum(sum, scratch);
  sq = block_sum(sq, scratch);
  const double mean = sum / double(span);
  const double var = fmax(0.0, sq / double(span) - mean * mean);
  const float m = static_cast<float>(mean);
  const float inv = static_cast<float>(1.0 / sqrt(var + eps));
  const int64_t first_channel = (bg % groups) * per_group;
  const T* src = x + bg * span;
  T* dst = y + bg * span;
  const int64_t begin = blockIdx.x * slice, end = std::min(span, begin + slice);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int64_t ch = first_channel + i / N;
    const float scale = inv * (w ? to_f(w[ch]) : 1.f), shift = b ? to_f(b[ch]) : 0.f;
    dst[i] = from_f<T>((to_f(src[i]) - m) * scale + shift);
  }
}

}  // namespace

Tensor pixel_norm(const Tensor& x, float eps) {
  LTX2_CHECK(x.dim() >= 2, "pixel_norm: [B, C, ...] expected, got {}", x.str());
  use_device(x);
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t C = x.size(1), N = positions_of(x), total = x.size(0) * N;
  if (y.numel() == 0) return y;
  dispatch_float(x.dtype(), "pixel_norm", [&](auto t) {
    using T = decltype(t);
    pixel_norm_kernel<T><<<grid_for(total, kThreads), kThreads>>>(
        static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()), C, N, total, eps);
    check_launch();
  });
  return y;
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps) {
  LTX2_CHECK(x.dim() >= 2, "group_norm: [B, C, ...] expected, got {}", x.str());
  const int64_t B = x.size(0), C = x.size(1), N = positions_of(x);
  LTX2_CHECK(groups > 0 && C % groups == 0, "group_norm: {} channels in {} groups", C, groups);
  for (const Tensor* p : {&w, &b})
    if (p->defined())
      LTX2_CHECK(p->numel() == C && p->device() == x.device(), "group_norm: parameter {} for {}", p->str(),
                 x.str());
  if (w.defined() && b.defined())
    LTX2_CHECK(w.dtype() == b.dtype(), "group_norm: weight {} and bias {} differ in dtype", w.str(), b.str());
  use_device(x);
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t per_group = C / groups, span = per_group * N;
  if (y.numel() == 0) return y;
  const int64_t splits = std::min(kMaxSplits, (span + kSliceElements - 1) / kSliceElements);
  const int64_t slice = (span + splits - 1) / splits;
  LTX2_CHECK(B * groups <= 65535, "group_norm: {} (batch, group) pairs exceed the grid", B * groups);
  // The float64 partials, in a buffer of 8-byte elements (there is no f64 dtype).
  Tensor partials = Tensor::empty({B * groups * splits * 2}, DType::I64, x.device());
  double* part = static_cast<double*>(partials.data_ptr());
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(B * groups));
  const DType param_dtype = w.defined() ? w.dtype() : b.defined() ? b.dtype() : x.dtype();
  dispatch_float(x.dtype(), "group_norm", [&](auto t) {
    using T = decltype(t);
    group_stats_kernel<T><<<grid, kThreads>>>(part, static_cast<const T*>(xc.data_ptr()), span, slice);
    check_launch();
    dispatch_float(param_dtype, "group_norm parameters", [&](auto tw) {
      using TW = decltype(tw);
      group_apply_kernel<T, TW><<<grid, kThreads>>>(
          static_cast<T*>(y.data_ptr()), static_cast<const T*>(xc.data_ptr()), part,
          wc.defined() ? static_cast<const TW*>(wc.data_ptr()) : nullptr,
          bc.defined() ? static_cast<const TW*>(bc.data_ptr()) : nullptr, groups, per_group, N, slice, eps);
      check_launch();
    });
  });
  return y;
}

}  // namespace ltx2::cuda
