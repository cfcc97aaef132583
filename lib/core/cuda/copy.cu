// Strided, converting copy between two GPU tensors of the same shape (up to 8 dimensions). The layout
// is collapsed first: size-1 dims dropped, and a dim merged into its inner neighbour when it is
// contiguous over it in both tensors (stride 0 broadcasts merge too). A same-dtype copy then moves raw
// words: when the innermost collapsed dim has stride 1 in both and its length, every other stride and
// both base addresses allow, words of 16 (else 8, 4, 2) bytes, e.g. 8 bf16 of a head split
// [B, T, H, D] -> [B, H, T, D] per thread, and otherwise one element per word. Index math is 32-bit
// when every offset fits. A copy that converts dtypes (f32, bf16, f16, f8e4m3, f8e5m2, i32, i64), or
// scales (cuda_copy_scaled: dequantizing an 8-bit weight), goes element by element through float32
// (integers directly) with 64-bit index math over the collapsed layout; the 8-bit floats round as
// the host does (core/dtype.h's functions).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda/check.h"
#include "core/cuda/memory.h"
#include "core/tensor.h"

namespace ltx2 {

namespace {

constexpr int kMaxDims = 8;
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride beyond this

// Outermost dim first; strides in elements (words once widened).
struct Layout {
  int ndim = 0;
  int64_t shape[kMaxDims];
  int64_t dst_strides[kMaxDims];
  int64_t src_strides[kMaxDims];
};

template <typename I>
struct DeviceLayout {
  int ndim;
  I shape[kMaxDims];
  I dst_strides[kMaxDims];
  I src_strides[kMaxDims];
};

Layout collapse(const Tensor& dst, const Tensor& src) {
  Layout l;
  for (int d = dst.dim() - 1; d >= 0; --d) {  // innermost first, reversed at the end
    const int64_t n = dst.shape()[d], ds = dst.strides()[d], ss = src.strides()[d];
    if (n == 1) continue;
    const int last = l.ndim - 1;
    if (l.ndim > 0 && ds == l.shape[last] * l.dst_strides[last] &&
        ss == l.shape[last] * l.src_strides[last]) {
      l.shape[last] *= n;
      continue;
    }
    l.shape[l.ndim] = n;
    l.dst_strides[l.ndim] = ds;
    l.src_strides[l.ndim] = ss;
    ++l.ndim;
  }
  if (l.ndim == 0) {  // a single element
    l.shape[0] = 1;
    l.dst_strides[0] = l.src_strides[0] = 1;
    l.ndim = 1;
  }
  std::reverse(l.shape, l.shape + l.ndim);
  std::reverse(l.dst_strides, l.dst_strides + l.ndim);
  std::reverse(l.src_strides, l.src_strides + l.ndim);
  return l;
}

// The widest word (bytes) a same-dtype copy of elements of `elem` bytes can move, and the layout
// rescaled to it.
size_t widen(Layout& l, size_t elem, const void* dst, const void* src) {
  const int inner = l.ndim - 1;
  if (l.dst_strides[inner] != 1 || l.src_strides[inner] != 1) return elem;
  for (size_t word = 16; word > elem; word /= 2) {
    const int64_t k = static_cast<int64_t>(word / elem);
    bool ok = word % elem == 0 && l.shape[inner] % k == 0 && reinterpret_cast<uintptr_t>(dst) % word == 0 &&
              reinterpret_cast<uintptr_t>(src) % word == 0;
    for (int d = 0; d < inner; ++d) ok = ok && l.dst_strides[d] % k == 0 && l.src_strides[d] % k == 0;
    if (!ok) continue;
    l.shape[inner] /= k;
    for (int d = 0; d < inner; ++d) {
      l.dst_strides[d] /= k;
      l.src_strides[d] /= k;
    }
    return word;
  }
  return elem;
}

int64_t count(const Layout& l) {
  int64_t n = 1;
  for (int d = 0; d < l.ndim; ++d) n *= l.shape[d];
  return n;
}

// Whether every index and offset (and the grid-stride loop's next index) fits in int32.
bool fits_int32(const Layout& l) {
  int64_t dmax = 0, smax = 0;
  for (int d = 0; d < l.ndim; ++d) {
    dmax += (l.shape[d] - 1) * l.dst_strides[d];
    smax += (l.shape[d] - 1) * l.src_strides[d];
  }
  const int64_t limit = INT32_MAX / 2;
  return count(l) <= limit && dmax <= limit && smax <= limit;
}

template <typename I>
DeviceLayout<I> device_layout(const Layout& l) {
  DeviceLayout<I> d{};
  d.ndim = l.ndim;
  for (int i = 0; i < l.ndim; ++i) {
    d.shape[i] = static_cast<I>(l.shape[i]);
    d.dst_strides[i] = static_cast<I>(l.dst_strides[i]);
    d.src_strides[i] = static_cast<I>(l.src_strides[i]);
  }
  return d;
}

// Element i (row-major over the layout) -> its dst and src offsets; the outermost dim needs no division.
template <typename I>
__device__ __forceinline__ void offsets(const DeviceLayout<I>& l, I i, I& doff, I& soff) {
  I rem = i;
  doff = 0;
  soff = 0;
  for (int d = l.ndim - 1; d > 0; --d) {
    const I c = rem % l.shape[d];
    rem /= l.shape[d];
    doff += c * l.dst_strides[d];
    soff += c * l.src_strides[d];
  }
  doff += rem * l.dst_strides[0];
  soff += rem * l.src_strides[0];
}

template <typename W, typename I>
__global__ void copy_words_kernel(W* dst, const W* src, DeviceLayout<I> l, I n) {
  for (I i = blockIdx.x * I(blockDim.x) + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I doff, soff;
    offsets(l, i, doff, soff);
    dst[doff] = src[soff];
  }
}

// The 8-bit floats, told apart by type.
struct F8E4M3 {
  uint8_t bits;
};
struct F8E5M2 {
  uint8_t bits;
};

template <typename T>
__device__ float load_f(const T* p) {
  return static_cast<float>(*p);
}
template <>
__device__ float load_f<__nv_bfloat16>(const __nv_bfloat16* p) {
  return __bfloat162float(*p);
}
template <>
__device__ float load_f<__half>(const __half* p) {
  return __half2float(*p);
}

template <>
__device__ float load_f<F8E4M3>(const F8E4M3* p) {
  return f8e4m3_to_f32(p->bits);
}
template <>
__device__ float load_f<F8E5M2>(const F8E5M2* p) {
  return f8e5m2_to_f32(p->bits);
}

template <typename T>
__device__ void store_f(T* p, float v) {
  *p = static_cast<T>(v);
}
template <>
__device__ void store_f<__nv_bfloat16>(__nv_bfloat16* p, float v) {
  *reinterpret_cast<uint16_t*>(p) = f32_to_bf16(v);  // the host's rounding, NaN included
}
template <>
__device__ void store_f<__half>(__half* p, float v) {
  *p = __float2half(v);
}
template <>
__device__ void store_f<F8E4M3>(F8E4M3* p, float v) {
  p->bits = f32_to_f8e4m3(v);
}
template <>
__device__ void store_f<F8E5M2>(F8E5M2* p, float v) {
  p->bits = f32_to_f8e5m2(v);
}

template <typename D, typename S>
__global__ void convert_kernel(D* dst, const S* src, DeviceLayout<int64_t> l, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t doff, soff;
    offsets(l, i, doff, soff);
    if constexpr (std::is_integral_v<D> && std::is_integral_v<S>)
      dst[doff] = static_cast<D>(src[soff]);
    else
      store_f(dst + doff, scale == 1.f ? load_f(src + soff) : load_f(src + soff) * scale);
  }
}

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

template <typename W>
void copy_words(void* dst, const void* src, const Layout& l) {
  const int64_t n = count(l);
  if (fits_int32(l))
    copy_words_kernel<W, int32_t><<<blocks_for(n), kThreads>>>(
        static_cast<W*>(dst), static_cast<const W*>(src), device_layout<int32_t>(l), static_cast<int32_t>(n));
  else
    copy_words_kernel<W, int64_t><<<blocks_for(n), kThreads>>>(
        static_cast<W*>(dst), static_cast<const W*>(src), device_layout<int64_t>(l), n);
  LTX2_CUDA_CHECK(cudaGetLastError());
}

template <typename D, typename S>
void convert(const Tensor& dst, const Tensor& src, const Layout& l, float scale) {
  const int64_t n = count(l);
  convert_kernel<D, S><<<blocks_for(n), kThreads>>>(static_cast<D*>(dst.data_ptr()),
                                                    static_cast<const S*>(src.data_ptr()),
                                                    device_layout<int64_t>(l), n, scale);
  LTX2_CUDA_CHECK(cudaGetLastError());
}

template <typename D>
void convert_from(const Tensor& dst, const Tensor& src, const Layout& l, float scale) {
  switch (src.dtype()) {
    case DType::F32: return convert<D, float>(dst, src, l, scale);
    case DType::BF16: return convert<D, __nv_bfloat16>(dst, src, l, scale);
    case DType::F16: return convert<D, __half>(dst, src, l, scale);
    case DType::F8E4M3: return convert<D, F8E4M3>(dst, src, l, scale);
    case DType::F8E5M2: return convert<D, F8E5M2>(dst, src, l, scale);
    case DType::I32: return convert<D, int32_t>(dst, src, l, scale);
    case DType::I64: return convert<D, int64_t>(dst, src, l, scale);
    default:
      LTX2_FAIL("GPU copy from {} to {} is not supported", dtype_name(src.dtype()), dtype_name(dst.dtype()));
  }
}

}  // namespace

void cuda_copy_scaled(const Tensor& dst, const Tensor& src, float scale) {
  LTX2_CHECK(dst.dim() <= kMaxDims, "GPU copy of a {}-d tensor (at most {})", dst.dim(), kMaxDims);
  LTX2_CHECK(dst.device() == src.device(), "GPU copy across devices {} -> {}", src.device().str(),
             dst.device().str());
  if (dst.numel() == 0) return;
  Layout l = collapse(dst, src);
  LTX2_CUDA_CHECK(cudaSetDevice(dst.device().index));
  if (dst.dtype() == src.dtype() && scale == 1.f) {
    switch (widen(l, dtype_size(dst.dtype()), dst.data_ptr(), src.data_ptr())) {
      case 16: return copy_words<uint4>(dst.data_ptr(), src.data_ptr(), l);
      case 8: return copy_words<uint2>(dst.data_ptr(), src.data_ptr(), l);
      case 4: return copy_words<uint32_t>(dst.data_ptr(), src.data_ptr(), l);
      case 2: return copy_words<uint16_t>(dst.data_ptr(), src.data_ptr(), l);
      case 1: return copy_words<uint8_t>(dst.data_ptr(), src.data_ptr(), l);
      default: LTX2_FAIL("GPU copy of {} elements is not supported", dtype_name(dst.dtype()));
    }
  }
  switch (dst.dtype()) {
    case DType::F32: return convert_from<float>(dst, src, l, scale);
    case DType::BF16: return convert_from<__nv_bfloat16>(dst, src, l, scale);
    case DType::F16: return convert_from<__half>(dst, src, l, scale);
    case DType::F8E4M3: return convert_from<F8E4M3>(dst, src, l, scale);
    case DType::F8E5M2: return convert_from<F8E5M2>(dst, src, l, scale);
    case DType::I32: return convert_from<int32_t>(dst, src, l, scale);
    case DType::I64: return convert_from<int64_t>(dst, src, l, scale);
    default:
      LTX2_FAIL("GPU copy from {} to {} is not supported", dtype_name(src.dtype()), dtype_name(dst.dtype()));
  }
}

void cuda_copy_strided(const Tensor& dst, const Tensor& src) {
  cuda_copy_scaled(dst, src, 1.f);
}

}  // namespace ltx2
