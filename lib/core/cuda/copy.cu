// Strided, converting copy between two GPU tensors of the same shape (up to 8 dimensions).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/check.h"
#include "core/cuda/memory.h"
#include "core/tensor.h"

namespace ltx2 {

namespace {

constexpr int kMaxDims = 8;

struct StridedLayout {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t dst_strides[kMaxDims];
  int64_t src_strides[kMaxDims];
};

template <typename T>
__device__ float load_f(const T* p) { return static_cast<float>(*p); }
template <>
__device__ float load_f<__nv_bfloat16>(const __nv_bfloat16* p) { return __bfloat162float(*p); }
template <>
__device__ float load_f<__half>(const __half* p) { return __half2float(*p); }

template <typename T>
__device__ void store_f(T* p, float v) { *p = static_cast<T>(v); }
template <>
__device__ void store_f<__nv_bfloat16>(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
template <>
__device__ void store_f<__half>(__half* p, float v) { *p = __float2half(v); }

template <typename D, typename S>
__global__ void strided_copy_kernel(D* dst, const S* src, StridedLayout l, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, doff = 0, soff = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      int64_t c = rem % l.shape[d];
      rem /= l.shape[d];
      doff += c * l.dst_strides[d];
      soff += c * l.src_strides[d];
    }
    if constexpr (std::is_same_v<D, S>) {
      dst[doff] = src[soff];
    } else {
      store_f(dst + doff, load_f(src + soff));
    }
  }
}

template <typename D, typename S>
void launch(const Tensor& dst, const Tensor& src, const StridedLayout& l) {
  int64_t n = dst.numel();
  int threads = 256;
  int blocks = static_cast<int>(std::min<int64_t>((n + threads - 1) / threads, 65535));
  strided_copy_kernel<D, S><<<blocks, threads>>>(static_cast<D*>(dst.data_ptr()),
                                                 static_cast<const S*>(src.data_ptr()), l, n);
  LTX2_CUDA_CHECK(cudaGetLastError());
}

template <typename D>
void dispatch_src(const Tensor& dst, const Tensor& src, const StridedLayout& l) {
  switch (src.dtype()) {
    case DType::F32: return launch<D, float>(dst, src, l);
    case DType::BF16: return launch<D, __nv_bfloat16>(dst, src, l);
    case DType::F16: return launch<D, __half>(dst, src, l);
    case DType::I32: return launch<D, int32_t>(dst, src, l);
    case DType::I64: return launch<D, int64_t>(dst, src, l);
    default: LTX2_FAIL("GPU copy from {} is not supported", dtype_name(src.dtype()));
  }
}

}  // namespace

void cuda_copy_strided(const Tensor& dst, const Tensor& src) {
  LTX2_CHECK(dst.dim() <= kMaxDims, "GPU copy of a {}-d tensor (at most {})", dst.dim(), kMaxDims);
  LTX2_CHECK(dst.device() == src.device(), "GPU copy across devices {} -> {}", src.device().str(),
             dst.device().str());
  if (dst.numel() == 0) return;
  StridedLayout l{};
  l.ndim = dst.dim();
  for (int d = 0; d < l.ndim; ++d) {
    l.shape[d] = dst.shape()[d];
    l.dst_strides[d] = dst.strides()[d];
    l.src_strides[d] = src.strides()[d];
  }
  LTX2_CUDA_CHECK(cudaSetDevice(dst.device().index));
  switch (dst.dtype()) {
    case DType::F32: return dispatch_src<float>(dst, src, l);
    case DType::BF16: return dispatch_src<__nv_bfloat16>(dst, src, l);
    case DType::F16: return dispatch_src<__half>(dst, src, l);
    case DType::I32: return dispatch_src<int32_t>(dst, src, l);
    case DType::I64: return dispatch_src<int64_t>(dst, src, l);
    default: LTX2_FAIL("GPU copy to {} is not supported", dtype_name(dst.dtype()));
  }
}

}  // namespace ltx2
