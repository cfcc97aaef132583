// Helpers shared by the CUDA kernels: element loads/stores as float for every floating dtype, aligned
// packed loads/stores, a dtype switch, the launch check, and the collapsed strided layout used by
// broadcasting ops. All kernels run on the legacy default stream of the tensor's device (the allocator relies
// on one stream per device for stream-ordered reuse).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/check.h"
#include "core/tensor.h"

namespace ltx2::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float to_f(float v) {
  return v;
}
__device__ __forceinline__ float to_f(bf16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ bf16 from_f<bf16>(float v) {
  return __float2bfloat16(v);
}

// V elements of T moved as one aligned access (16 bytes for V = 16 / sizeof(T)), converted to and
// from float32; the pointer must be aligned to the pack.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ void load_pack(float (&out)[V], const T* p) {
  const Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(p);
#pragma unroll
  for (int j = 0; j < V; ++j) out[j] = to_f(pk.v[j]);
}

template <typename T, int V>
__device__ __forceinline__ void store_pack(T* p, const float (&in)[V]) {
  Pack<T, V> pk;
#pragma unroll
  for (int j = 0; j < V; ++j) pk.v[j] = from_f<T>(in[j]);
  *reinterpret_cast<Pack<T, V>*>(p) = pk;
}

// Calls f(T{}) with T the element type of a f32 or bf16 tensor.
template <typename F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); break;
    case DType::BF16: f(bf16{}); break;
    default: LTX2_FAIL("{}: the CUDA path takes f32 or bf16, got {}", op, dtype_name(t));
  }
}

// Makes the tensor's device current; every op calls this before launching.
inline void use_device(const Tensor& t) {
  LTX2_CUDA_CHECK(cudaSetDevice(t.device().index));
}

inline void check_launch() {
  LTX2_CUDA_CHECK(cudaGetLastError());
}

inline unsigned grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// 2^x by the special-function unit, subnormal results flushed to zero (exp2f without fast math
// adds a rescale for them): the softmax kernels' exponential, where such values are noise.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Warp and block reductions of a float (block: every thread gets the result; blockDim.x <= 1024,
// a multiple of 32; `scratch` holds 32 floats; `identity` fills the lanes past the last warp).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_min(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <typename WarpOp>
__device__ __forceinline__ float block_reduce(float v, float* scratch, WarpOp op, float identity) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = op(v);
  __syncthreads();  // scratch may still be read from a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < nwarps ? scratch[lane] : identity;
  return op(v);
}

}  // namespace ltx2::cuda
