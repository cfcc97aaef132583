// CUDA fused qk-norm and RoPE (ops::rms_norm_rope): one block per token row of x [B, T, dim]. The block
// sums the row's squares in float32 (the read that brings the row from memory; the rotation's second
// read hits the cache, as in norm.cu), then writes rope(round(x * rsqrt(mean(x²) + eps) * w)) once in
// x's dtype. The sum runs in the order of norm.cu's element-wise kernel, the normed value is rounded
// to x's dtype before the rotation, and both steps use norm.cu's and rope.cu's expressions, so the
// result is the unfused rms_norm -> apply_rope pair's up to the last bits of the statistic (norm.cu
// sums rows of whole 16-byte packs in another order) and the compiler's FMA contraction. Split tables
// are [Bt, H, T, dim/(2H)], interleaved [Bt, T, dim], float32 or bf16, Bt 1 (broadcast) or B; w is f32
// or bf16. The rotation moves 16-byte packs when dim, the split half-head width and every base address
// allow, else single elements.
#include "kernels/common.cuh"
#include "ops/rope.h"

namespace ltx2::cuda {

namespace {

constexpr int kSplitLayout = 0;  // ops::RopeLayout::Split; Interleaved is 1
constexpr int kThreads = 256;    // norm.cu's, for its summation order

// Elements per aligned access of a T operand when a thread handles V consecutive elements.
template <typename T>
__host__ __device__ constexpr int pack_width(int V, bool aligned) {
  return !aligned ? 1 : V < int(16 / sizeof(T)) ? V : int(16 / sizeof(T));
}

// V consecutive elements as packs of A (A = 1: any alignment).
template <int V, int A, typename T>
__device__ __forceinline__ void load_n(float (&out)[V], const T* p) {
#pragma unroll
  for (int k = 0; k < V; k += A) {
    float part[A];
    load_pack<T, A>(part, p + k);
#pragma unroll
    for (int j = 0; j < A; ++j) out[k + j] = part[j];
  }
}

template <int V, int A, typename T>
__device__ __forceinline__ void store_n(T* p, const float (&in)[V]) {
#pragma unroll
  for (int k = 0; k < V; k += A) {
    float part[A];
#pragma unroll
    for (int j = 0; j < A; ++j) part[j] = in[k + j];
    store_pack<T, A>(p + k, part);
  }
}

// rsqrt(mean(row²) + eps) over the row [D], every thread of the block gets it. The sum runs in
// rms_norm_kernel's order (element i on thread i % kThreads, the same block reduction); norm.cu's
// packed kernel, which the unfused op takes for 16-byte rows, sums in packs and may differ in the
// last bit.
template <typename T>
__device__ __forceinline__ float row_inv_rms(const T* row, int64_t D, float eps, float* scratch) {
  float ss = 0.f;
  for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
    const float v = to_f(row[i]);
    ss += v * v;
  }
  ss = block_reduce(
      ss, scratch, [](float v) { return warp_sum(v); }, 0.f);
  return rsqrtf(ss / static_cast<float>(D) + eps);
}

// The normed row values at o .. o + V, rounded to T as rms_norm's output is.
template <typename T, typename TW, int V, bool Aligned>
__device__ __forceinline__ void normed(float (&v)[V], const T* row, const TW* w, int64_t o, float inv) {
  load_n<V, pack_width<T>(V, Aligned)>(v, row + o);
  float wv[V];
#pragma unroll
  for (int j = 0; j < V; ++j) wv[j] = 1.f;
  if (w) load_n<V, pack_width<TW>(V, Aligned)>(wv, w + o);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = to_f(from_f<T>(v[j] * inv * wv[j]));
}

// Split: each thread rotates V pairs (i, i + hd2) of one head.
template <typename T, typename TW, typename C, int V, bool Aligned>
__global__ void norm_rope_split_kernel(T* out, const T* x, const TW* w, const C* cos, const C* sin,
                                       int64_t T_, int64_t D, int64_t H, int64_t hd2, bool broadcast,
                                       float eps) {
  __shared__ float scratch[32];
  constexpr int AT = pack_width<T>(V, Aligned), AC = pack_width<C>(V, Aligned);
  const int64_t row = blockIdx.x, b = row / T_, t = row % T_;
  const T* xr = x + row * D;
  T* orow = out + row * D;
  const float inv = row_inv_rms(xr, D, eps, scratch);
  for (int64_t e = int64_t(threadIdx.x) * V; e < D / 2; e += int64_t(blockDim.x) * V) {
    const int64_t h = e / hd2, i = e % hd2, o1 = h * 2 * hd2 + i, o2 = o1 + hd2;
    const int64_t to = (((broadcast ? 0 : b) * H + h) * T_ + t) * hd2 + i;
    float x1[V], x2[V], c[V], s[V], y1[V], y2[V];
    normed<T, TW, V, Aligned>(x1, xr, w, o1, inv);
    normed<T, TW, V, Aligned>(x2, xr, w, o2, inv);
    load_n<V, AC>(c, cos + to);
    load_n<V, AC>(s, sin + to);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      y1[j] = x1[j] * c[j] + (-s[j]) * x2[j];
      y2[j] = x2[j] * c[j] + s[j] * x1[j];
    }
    store_n<V, AT>(orow + o1, y1);
    store_n<V, AT>(orow + o2, y2);
  }
}

// Interleaved: each thread rotates the V / 2 pairs (2i, 2i + 1) of V consecutive elements.
template <typename T, typename TW, typename C, int V, bool Aligned>
__global__ void norm_rope_interleaved_kernel(T* out, const T* x, const TW* w, const C* cos, const C* sin,
                                             int64_t T_, int64_t D, bool broadcast, float eps) {
  __shared__ float scratch[32];
  constexpr int AT = pack_width<T>(V, Aligned), AC = pack_width<C>(V, Aligned);
  const int64_t row = blockIdx.x, b = row / T_, t = row % T_;
  const T* xr = x + row * D;
  T* orow = out + row * D;
  const float inv = row_inv_rms(xr, D, eps, scratch);
  for (int64_t e = int64_t(threadIdx.x) * V; e < D; e += int64_t(blockDim.x) * V) {
    const int64_t to = ((broadcast ? 0 : b) * T_ + t) * D + e;
    float v[V], c[V], s[V], y[V];
    normed<T, TW, V, Aligned>(v, xr, w, e, inv);
    load_n<V, AC>(c, cos + to);
    load_n<V, AC>(s, sin + to);
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      y[j] = v[j] * c[j] + (-v[j + 1]) * s[j];
      y[j + 1] = v[j + 1] * c[j + 1] + v[j] * s[j + 1];
    }
    store_n<V, AT>(orow + e, y);
  }
}

bool aligned16(std::initializer_list<const void*> ptrs) {
  bool ok = true;
  for (const void* p : ptrs) ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  return ok;
}

}  // namespace

Tensor rms_norm_rope(const Tensor& x_in, const Tensor& w_in, float eps, const Tensor& cos_in,
                     const Tensor& sin_in, int layout) {
  LTX2_CHECK(x_in.dim() == 3, "rms_norm_rope: x must be [B, T, dim], got {}", x_in.str());
  LTX2_CHECK(!w_in.defined() || (w_in.numel() == x_in.size(2) && w_in.device() == x_in.device()),
             "rms_norm_rope: weight {} for x {}", w_in.str(), x_in.str());
  LTX2_CHECK(cos_in.device() == x_in.device() && sin_in.device() == x_in.device(),
             "rms_norm_rope: tables {} / {} are not on x's device {}", cos_in.str(), sin_in.str(),
             x_in.device().str());
  LTX2_CHECK(cos_in.shape() == sin_in.shape() && cos_in.dtype() == sin_in.dtype(),
             "rms_norm_rope: cos {} and sin {} differ", cos_in.str(), sin_in.str());
  use_device(x_in);
  const Tensor x = x_in.contiguous(), w = w_in.defined() ? w_in.contiguous() : Tensor();
  const Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), Bt = cos.dim() > 0 ? cos.size(0) : 0;
  LTX2_CHECK(Bt == 1 || Bt == B, "rms_norm_rope: tables {} do not fit x {}", cos.str(), x.str());
  const bool split = layout == kSplitLayout;
  if (split)
    LTX2_CHECK(cos.dim() == 4 && cos.size(2) == T && cos.size(1) * cos.size(3) * 2 == D,
               "rms_norm_rope: split tables {} do not fit x {}", cos.str(), x.str());
  else
    LTX2_CHECK(cos.dim() == 3 && cos.size(1) == T && cos.size(2) == D && D % 2 == 0,
               "rms_norm_rope: interleaved tables {} do not fit x {}", cos.str(), x.str());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t rows = B * T;
  if (rows == 0 || D == 0) return out;
  const int64_t H = split ? cos.size(1) : 1, hd2 = split ? cos.size(3) : 0;
  dispatch_float(x.dtype(), "rms_norm_rope", [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(w.defined() ? w.dtype() : x.dtype(), "rms_norm_rope weight", [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(cos.dtype(), "rms_norm_rope tables", [&](auto tc) {
        using TC = decltype(tc);
        constexpr int V = 16 / sizeof(TX);
        auto* o = static_cast<TX*>(out.data_ptr());
        auto* xp = static_cast<const TX*>(x.data_ptr());
        auto* wp = w.defined() ? static_cast<const TW*>(w.data_ptr()) : nullptr;
        auto* cp = static_cast<const TC*>(cos.data_ptr());
        auto* sp = static_cast<const TC*>(sin.data_ptr());
        const bool packed = aligned16({o, xp, wp, cp, sp}) && (split ? hd2 % V == 0 : D % V == 0);
        const auto blocks = static_cast<unsigned>(rows);
        if (split && packed)
          norm_rope_split_kernel<TX, TW, TC, V, true>
              <<<blocks, kThreads>>>(o, xp, wp, cp, sp, T, D, H, hd2, Bt == 1, eps);
        else if (split)
          norm_rope_split_kernel<TX, TW, TC, 1, false>
              <<<blocks, kThreads>>>(o, xp, wp, cp, sp, T, D, H, hd2, Bt == 1, eps);
        else if (packed)
          norm_rope_interleaved_kernel<TX, TW, TC, V, true>
              <<<blocks, kThreads>>>(o, xp, wp, cp, sp, T, D, Bt == 1, eps);
        else
          norm_rope_interleaved_kernel<TX, TW, TC, 2, false>
              <<<blocks, kThreads>>>(o, xp, wp, cp, sp, T, D, Bt == 1, eps);
        check_launch();
      });
    });
  });
  return out;
}

}  // namespace ltx2::cuda
