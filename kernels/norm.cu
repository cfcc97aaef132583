// CUDA RMSNorm and LayerNorm over the last dimension: one block per row, statistics in float32
// (LayerNorm's variance is a second pass over the row, as the CPU op does it), output in the
// input's dtype. The affine parameters may be f32 or bf16 independently of the input. RMSNorm
// reads rows in 16-byte packs when their width and address allow.
#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T, typename TW>
__global__ void rms_norm_kernel(T* out, const T* x, const TW* w, int64_t C, float eps) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    float v = to_f(row[i]);
    ss += v * v;
  }
  ss = block_reduce(
      ss, scratch, [](float v) { return warp_sum(v); }, 0.f);
  float inv = rsqrtf(ss / static_cast<float>(C) + eps);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    orow[i] = from_f<T>(to_f(row[i]) * inv * (w ? to_f(w[i]) : 1.f));
}

// The same over rows whose width, addresses and weight allow 16-byte packs of x (V elements).
template <typename T, typename TW, int V>
__global__ void rms_norm_packed_kernel(T* out, const T* x, const TW* w, int64_t C, float eps) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  float ss = 0.f;
  for (int64_t i = int64_t(threadIdx.x) * V; i < C; i += int64_t(blockDim.x) * V) {
    float v[V];
    load_pack<T, V>(v, row + i);
#pragma unroll
    for (int j = 0; j < V; ++j) ss += v[j] * v[j];
  }
  ss = block_reduce(
      ss, scratch, [](float v) { return warp_sum(v); }, 0.f);
  const float inv = rsqrtf(ss / static_cast<float>(C) + eps);
  for (int64_t i = int64_t(threadIdx.x) * V; i < C; i += int64_t(blockDim.x) * V) {
    float v[V];
    load_pack<T, V>(v, row + i);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] *= inv * (w ? to_f(w[i + j]) : 1.f);
    store_pack<T, V>(orow + i, v);
  }
}

template <typename T, typename TW>
__global__ void layer_norm_kernel(T* out, const T* x, const TW* w, const TW* b, int64_t C, float eps) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * C;
  T* orow = out + blockIdx.x * C;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) s += to_f(row[i]);
  float mean = block_reduce(
                   s, scratch, [](float v) { return warp_sum(v); }, 0.f) /
               static_cast<float>(C);
  float var = 0.f;
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x) {
    float d = to_f(row[i]) - mean;
    var += d * d;
  }
  var = block_reduce(
      var, scratch, [](float v) { return warp_sum(v); }, 0.f);
  float inv = rsqrtf(var / static_cast<float>(C) + eps);
  for (int64_t i = threadIdx.x; i < C; i += blockDim.x)
    orow[i] = from_f<T>((to_f(row[i]) - mean) * inv * (w ? to_f(w[i]) : 1.f) + (b ? to_f(b[i]) : 0.f));
}

void check_param(const Tensor& x, const Tensor& p, const char* what) {
  if (!p.defined()) return;
  LTX2_CHECK(p.numel() == x.size(-1) && p.device() == x.device(), "{}: parameter {} for input {}", what,
             p.str(), x.str());
}

// The parameters' dtype: theirs when given (both the same), else the input's.
DType param_dtype(const Tensor& x, const Tensor& w, const Tensor& b, const char* what) {
  if (w.defined() && b.defined())
    LTX2_CHECK(w.dtype() == b.dtype(), "{}: weight {} and bias {} differ in dtype", what, w.str(), b.str());
  return w.defined() ? w.dtype() : b.defined() ? b.dtype() : x.dtype();
}

template <typename TW>
const TW* param_ptr(const Tensor& p) {
  return p.defined() ? static_cast<const TW*>(p.data_ptr()) : nullptr;
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  LTX2_CHECK(x.dim() >= 1, "rms_norm: input {} has no last dimension", x.str());
  check_param(x, w, "rms_norm");
  use_device(x);
  Tensor xc = x.contiguous(), wc = w.defined() ? w.contiguous() : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "rms_norm", [&](auto t) {
    using T = decltype(t);
    dispatch_float(param_dtype(x, w, Tensor(), "rms_norm"), "rms_norm weight", [&](auto tw) {
      using TW = decltype(tw);
      auto* o = static_cast<T*>(out.data_ptr());
      auto* xp = static_cast<const T*>(xc.data_ptr());
      constexpr int V = 16 / sizeof(T);
      if (C % V == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0)
        rms_norm_packed_kernel<T, TW, V>
            <<<static_cast<unsigned>(rows), kThreads>>>(o, xp, param_ptr<TW>(wc), C, eps);
      else
        rms_norm_kernel<T, TW><<<static_cast<unsigned>(rows), kThreads>>>(o, xp, param_ptr<TW>(wc), C, eps);
      check_launch();
    });
  });
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
  LTX2_CHECK(x.dim() >= 1, "layer_norm: input {} has no last dimension", x.str());
  check_param(x, w, "layer_norm");
  check_param(x, b, "layer_norm");
  use_device(x);
  Tensor xc = x.contiguous();
  Tensor wc = w.defined() ? w.contiguous() : Tensor(), bc = b.defined() ? b.contiguous() : Tensor();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "layer_norm", [&](auto t) {
    using T = decltype(t);
    dispatch_float(param_dtype(x, w, b, "layer_norm"), "layer_norm parameters", [&](auto tw) {
      using TW = decltype(tw);
      layer_norm_kernel<T, TW><<<static_cast<unsigned>(rows), kThreads>>>(
          static_cast<T*>(out.data_ptr()), static_cast<const T*>(xc.data_ptr()), param_ptr<TW>(wc),
          param_ptr<TW>(bc), C, eps);
      check_launch();
    });
  });
  return out;
}

}  // namespace ltx2::cuda
