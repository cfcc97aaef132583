// CUDA fused AdaLN ops (ops/adaln.h): rms_norm_modulate, rms_norm_modulate_fp8 and add_gated, one
// block per token row.
// Each modulation value is read as table[i] + embedding[b, t or 0, i] straight from the block's
// scale_shift_table row and the AdaLN output (a strided view), never materialised; with an index,
// as table[i] + embedding[0, index[b, t], i] (the rows of the distinct timesteps). Float32
// arithmetic, one rounding to the result's dtype (f32 when any operand is f32, else bf16). Rows are read in
// 16-byte packs when every operand allows.
#include "kernels/common.cuh"
#include "ops/adaln.h"
#include "ops/fp8_quantize.h"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;

// One AdaLN row on the device: table [D] and, unless null, embedding rows at b * batch + t * token,
// or (index not null) at index[b * tokens + t] * token.
template <typename T>
struct DeviceRow {
  const T* table;
  const T* embedding;
  int64_t batch_stride, token_stride;
  const int32_t* index;
  int64_t tokens;
};

// values[j] = table[i + j] + embedding[b, t, i + j].
template <typename T, int V>
__device__ __forceinline__ void load_row(float (&out)[V], const DeviceRow<T>& r, int64_t b, int64_t t,
                                         int64_t i) {
  load_pack<T, V>(out, r.table + i);
  if (r.embedding) {
    float e[V];
    const int64_t at = r.index ? int64_t(r.index[b * r.tokens + t]) * r.token_stride
                               : b * r.batch_stride + t * r.token_stride;
    load_pack<T, V>(e, r.embedding + at + i);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] += e[j];
  }
}

// The row's 1 / rms(x) (every thread gets it).
template <typename T, int V>
__device__ __forceinline__ float inverse_rms(const T* xr, int64_t D, float eps, float* scratch) {
  float ss = 0.f;
  for (int64_t i = int64_t(threadIdx.x) * V; i < D; i += int64_t(blockDim.x) * V) {
    float v[V];
    load_pack<T, V>(v, xr + i);
#pragma unroll
    for (int j = 0; j < V; ++j) ss += v[j] * v[j];
  }
  ss = block_reduce(
      ss, scratch, [](float v) { return warp_sum(v); }, 0.f);
  return rsqrtf(ss / static_cast<float>(D) + eps);
}

// v[j] = x[i + j] · inv · (1 + scale) + shift in float32.
template <typename T, int V>
__device__ __forceinline__ void modulated(float (&v)[V], const T* xr, const DeviceRow<T>& shift,
                                          const DeviceRow<T>& scale, int64_t b, int64_t t, int64_t i,
                                          float inv) {
  float sh[V], sc[V];
  load_pack<T, V>(v, xr + i);
  load_row<T, V>(sh, shift, b, t, i);
  load_row<T, V>(sc, scale, b, t, i);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = v[j] * inv * (1.f + sc[j]) + sh[j];
}

template <typename T, int V>
__global__ void rms_norm_modulate_kernel(T* out, const T* x, DeviceRow<T> shift, DeviceRow<T> scale,
                                         int64_t T_, int64_t D, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, b = row / T_, t = row % T_;
  const T* xr = x + row * D;
  const float inv = inverse_rms<T, V>(xr, D, eps, scratch);
  for (int64_t i = int64_t(threadIdx.x) * V; i < D; i += int64_t(blockDim.x) * V) {
    float v[V];
    modulated<T, V>(v, xr, shift, scale, b, t, i, inv);
    store_pack<T, V>(out + row * D + i, v);
  }
}

// The modulated row's largest magnitude, then the row again (x is in L1 by now) quantized with the
// scale it gives: the values are never rounded to T, nor written.
template <typename T, int V>
__global__ void rms_norm_modulate_fp8_kernel(uint8_t* codes, float* scales, const T* x, DeviceRow<T> shift,
                                             DeviceRow<T> scale, int64_t T_, int64_t D, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, b = row / T_, t = row % T_;
  const T* xr = x + row * D;
  const float inv = inverse_rms<T, V>(xr, D, eps, scratch);
  float amax = 0.f;
  for (int64_t i = int64_t(threadIdx.x) * V; i < D; i += int64_t(blockDim.x) * V) {
    float v[V];
    modulated<T, V>(v, xr, shift, scale, b, t, i, inv);
#pragma unroll
    for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(v[j]));
  }
  amax = block_reduce(
      amax, scratch, [](float v) { return warp_max(v); }, 0.f);
  const float s = ops::row_scale_f8e4m3(amax), inverse = 1.f / s;
  for (int64_t i = int64_t(threadIdx.x) * V; i < D; i += int64_t(blockDim.x) * V) {
    float v[V];
    modulated<T, V>(v, xr, shift, scale, b, t, i, inv);
    Pack<uint8_t, V> q;
#pragma unroll
    for (int j = 0; j < V; ++j) q.v[j] = ops::quantize_f8e4m3(v[j], inverse);
    *reinterpret_cast<Pack<uint8_t, V>*>(codes + row * D + i) = q;
  }
  if (threadIdx.x == 0) scales[row] = s;
}

template <typename T, int V>
__global__ void add_gated_kernel(T* out, const T* x, const T* y, DeviceRow<T> gate, int64_t T_, int64_t D) {
  const int64_t row = blockIdx.x, b = row / T_, t = row % T_;
  for (int64_t i = int64_t(threadIdx.x) * V; i < D; i += int64_t(blockDim.x) * V) {
    float xv[V], yv[V], g[V];
    load_pack<T, V>(xv, x + row * D + i);
    load_pack<T, V>(yv, y + row * D + i);
    load_row<T, V>(g, gate, b, t, i);
#pragma unroll
    for (int j = 0; j < V; ++j) xv[j] += yv[j] * g[j];
    store_pack<T, V>(out + row * D + i, xv);
  }
}

// Mixed operands promote as the unfused ops do (PyTorch: bf16 with f32 gives f32): the result's dtype
// is f32 when any operand is f32, and every operand is converted to it (a no-op in the bf16 model).
DType promoted(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined() && t->dtype() == DType::F32) return DType::F32;
  return DType::BF16;
}

ops::AdaRow converted(const ops::AdaRow& r, DType dtype) {
  return {r.table.to(dtype), r.embedding.defined() ? r.embedding.to(dtype) : Tensor(), r.index};
}

// The row's device view; its operands are on x's device with a contiguous last dim.
template <typename T>
DeviceRow<T> device_row(const Tensor& x, const ops::AdaRow& r, const char* op) {
  for (const Tensor* p : {&r.table, &r.embedding})
    if (p->defined())
      LTX2_CHECK(p->device() == x.device() && p->stride(-1) == 1,
                 "{}: AdaLN operand {} must be on {} with a contiguous last dim", op, p->str(),
                 x.device().str());
  DeviceRow<T> d{static_cast<const T*>(r.table.data_ptr()), nullptr, 0, 0, nullptr, 0};
  if (r.embedding.defined()) {
    d.embedding = static_cast<const T*>(r.embedding.data_ptr());
    d.batch_stride = r.embedding.stride(0);
    d.token_stride = r.embedding.size(1) == 1 ? 0 : r.embedding.stride(1);
  }
  if (r.index.defined()) {
    LTX2_CHECK(r.index.is_contiguous(), "{}: the AdaLN index {} must be contiguous", op, r.index.str());
    d.index = static_cast<const int32_t*>(r.index.data_ptr());
    d.tokens = x.size(1);
    d.batch_stride = 0;
    d.token_stride = r.embedding.stride(1);
  }
  return d;
}

// 16-byte packs when D, every base address and every row stride allow them.
template <typename T>
bool packs_fit(int64_t D, std::initializer_list<const void*> ptrs, std::initializer_list<DeviceRow<T>> rows) {
  constexpr int64_t V = 16 / sizeof(T);
  bool ok = D % V == 0;
  for (const void* p : ptrs) ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  for (const DeviceRow<T>& r : rows)
    ok = ok && reinterpret_cast<uintptr_t>(r.table) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(r.embedding) % 16 == 0 && r.batch_stride % V == 0 &&
         r.token_stride % V == 0;
  return ok;
}

}  // namespace

Tensor rms_norm_modulate(const Tensor& x_in, const ops::AdaRow& shift_in, const ops::AdaRow& scale_in,
                         float eps) {
  use_device(x_in);
  const DType dtype =
      promoted({&x_in, &shift_in.table, &shift_in.embedding, &scale_in.table, &scale_in.embedding});
  const Tensor x = x_in.to(dtype).contiguous();
  const ops::AdaRow shift = converted(shift_in, dtype), scale = converted(scale_in, dtype);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t rows = x.size(0) * x.size(1), T = x.size(1), D = x.size(2);
  if (rows == 0 || D == 0) return out;
  dispatch_float(x.dtype(), "rms_norm_modulate", [&](auto tag) {
    using T_ = decltype(tag);
    const DeviceRow<T_> sh = device_row<T_>(x, shift, "rms_norm_modulate");
    const DeviceRow<T_> sc = device_row<T_>(x, scale, "rms_norm_modulate");
    auto* o = static_cast<T_*>(out.data_ptr());
    auto* xp = static_cast<const T_*>(x.data_ptr());
    if (packs_fit<T_>(D, {o, xp}, {sh, sc}))
      rms_norm_modulate_kernel<T_, 16 / sizeof(T_)>
          <<<static_cast<unsigned>(rows), kThreads>>>(o, xp, sh, sc, T, D, eps);
    else
      rms_norm_modulate_kernel<T_, 1><<<static_cast<unsigned>(rows), kThreads>>>(o, xp, sh, sc, T, D, eps);
    check_launch();
  });
  return out;
}

ops::Fp8Rows rms_norm_modulate_fp8(const Tensor& x_in, const ops::AdaRow& shift_in,
                                   const ops::AdaRow& scale_in, float eps) {
  use_device(x_in);
  const DType dtype =
      promoted({&x_in, &shift_in.table, &shift_in.embedding, &scale_in.table, &scale_in.embedding});
  const Tensor x = x_in.to(dtype).contiguous();
  const ops::AdaRow shift = converted(shift_in, dtype), scale = converted(scale_in, dtype);
  const int64_t rows = x.size(0) * x.size(1), T = x.size(1), D = x.size(2);
  ops::Fp8Rows out{Tensor::empty(x.shape(), DType::F8E4M3, x.device()),
                   Tensor::empty({rows}, DType::F32, x.device()), dtype};
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "rms_norm_modulate_fp8", [&](auto tag) {
    using T_ = decltype(tag);
    const DeviceRow<T_> sh = device_row<T_>(x, shift, "rms_norm_modulate_fp8");
    const DeviceRow<T_> sc = device_row<T_>(x, scale, "rms_norm_modulate_fp8");
    auto* codes = static_cast<uint8_t*>(out.codes.data_ptr());
    auto* scales = static_cast<float*>(out.scales.data_ptr());
    auto* xp = static_cast<const T_*>(x.data_ptr());
    // The codes are a fresh allocation, so their packs are aligned whenever D is whole packs.
    if (packs_fit<T_>(D, {xp}, {sh, sc}))
      rms_norm_modulate_fp8_kernel<T_, 16 / sizeof(T_)>
          <<<static_cast<unsigned>(rows), kThreads>>>(codes, scales, xp, sh, sc, T, D, eps);
    else
      rms_norm_modulate_fp8_kernel<T_, 1>
          <<<static_cast<unsigned>(rows), kThreads>>>(codes, scales, xp, sh, sc, T, D, eps);
    check_launch();
  });
  return out;
}

Tensor add_gated(const Tensor& x_in, const Tensor& y_in, const ops::AdaRow& gate_in) {
  LTX2_CHECK(y_in.device() == x_in.device(), "add_gated: y {} and x {} are on different devices", y_in.str(),
             x_in.str());
  use_device(x_in);
  const DType dtype = promoted({&x_in, &y_in, &gate_in.table, &gate_in.embedding});
  const Tensor x = x_in.to(dtype).contiguous(), y = y_in.to(dtype).contiguous();
  const ops::AdaRow gate = converted(gate_in, dtype);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t rows = x.size(0) * x.size(1), T = x.size(1), D = x.size(2);
  if (rows == 0 || D == 0) return out;
  dispatch_float(x.dtype(), "add_gated", [&](auto tag) {
    using T_ = decltype(tag);
    const DeviceRow<T_> g = device_row<T_>(x, gate, "add_gated");
    auto* o = static_cast<T_*>(out.data_ptr());
    auto* xp = static_cast<const T_*>(x.data_ptr());
    auto* yp = static_cast<const T_*>(y.data_ptr());
    if (packs_fit<T_>(D, {o, xp, yp}, {g}))
      add_gated_kernel<T_, 16 / sizeof(T_)><<<static_cast<unsigned>(rows), kThreads>>>(o, xp, yp, g, T, D);
    else
      add_gated_kernel<T_, 1><<<static_cast<unsigned>(rows), kThreads>>>(o, xp, yp, g, T, D);
    check_launch();
  });
  return out;
}

}  // namespace ltx2::cuda
