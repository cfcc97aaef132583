// CUDA fused qk-norm and RoPE (ops::rms_norm_rope, ops::rms_norm_rope_qk): one block per token row of
// x [B, T, dim], or of each of q and k when both are rotated by the same tables (self-attention): the
// blocks of q's row r and k's row r are neighbours in the grid, so the tables' lines one of them brings
// from memory the other finds in L2 and the tables are read once for the pair. Each thread loads its
// part of the row once, into registers: it sums its squares in float32 from them (the block adds the
// threads' sums), then writes rope(round(x * rsqrt(mean(x²) + eps) * w)) in x's dtype from the same
// registers. The normed value is rounded to x's dtype before the rotation and both steps use norm.cu's
// and rope.cu's expressions, so the result is the unfused rms_norm -> apply_rope pair's up to the last
// bits of the statistic (another summation order) and the compiler's FMA contraction. Split tables are
// [Bt, H, T, dim/(2H)], interleaved [Bt, T, dim], float32 or bf16, Bt 1 (broadcast) or B; w is f32 or
// bf16. The row moves in 16-byte packs when dim, the split half-head width and every base address
// allow, else in single elements (split) or pairs (interleaved).
#include "kernels/common.cuh"
#include "ops/norm_rope.h"
#include "ops/rope.h"

namespace ltx2::cuda {

namespace {

constexpr int kSplitLayout = 0;  // ops::RopeLayout::Split; Interleaved is 1
constexpr int kThreads = 256;

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

// The rows of one call: one tensor, or q and k (count 2) rotated by the same tables. Block i takes
// row i / count of tensor i % count.
template <typename T, typename TW, typename C>
struct NormRopeArgs {
  const T* x[2];
  T* out[2];
  const TW* w[2];  // nullptr: no affine
  const C* cos;
  const C* sin;
  int count;
  int64_t T_, D;
  int64_t H, hd2;  // split tables only
  bool broadcast;  // tables of batch 1
  float eps;
};

// Entry `which` (0 or 1) of a two-entry parameter array, selected without indexing (an indexed
// kernel parameter is copied to the stack).
template <typename P>
__device__ __forceinline__ P pick(const P (&p)[2], int which) {
  return which ? p[1] : p[0];
}

// The row's values x[o .. o + V) times inv and the weight, rounded to T as rms_norm's output is.
template <typename T, typename TW, int V, bool Aligned>
__device__ __forceinline__ void normalize(float (&v)[V], const TW* w, int64_t o, float inv) {
  float wv[V];
#pragma unroll
  for (int j = 0; j < V; ++j) wv[j] = 1.f;
  if (w) load_n<V, pack_width<TW>(V, Aligned)>(wv, w + o);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = to_f(from_f<T>(v[j] * inv * wv[j]));
}

// rsqrt(mean(row²) + eps) from the threads' partial sums; every thread of the block gets it.
__device__ __forceinline__ float inv_rms(float ss, int64_t D, float eps) {
  __shared__ float scratch[32];
  ss = block_reduce(
      ss, scratch, [](float v) { return warp_sum(v); }, 0.f);
  return rsqrtf(ss / static_cast<float>(D) + eps);
}

// Split: in iteration n a thread rotates the V pairs (i, i + hd2) of one head starting at pair
// e = (n * blockDim + thread) * V of the row's D / 2.
template <typename T, typename TW, typename C, int V, bool Aligned, int N>
__global__ void __launch_bounds__(kThreads) norm_rope_split_kernel(const NormRopeArgs<T, TW, C> a) {
  constexpr int AT = pack_width<T>(V, Aligned), AC = pack_width<C>(V, Aligned);
  const int which = static_cast<int>(blockIdx.x % a.count);
  const int64_t row = blockIdx.x / a.count, b = row / a.T_, t = row % a.T_, half = a.D / 2;
  const T* xr = pick(a.x, which) + row * a.D;
  float x1[N][V], x2[N][V];
  float ss = 0.f;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const int64_t e = (int64_t(n) * blockDim.x + threadIdx.x) * V;
    if (e >= half) break;
    const int64_t o1 = e / a.hd2 * 2 * a.hd2 + e % a.hd2;
    load_n<V, AT>(x1[n], xr + o1);
    load_n<V, AT>(x2[n], xr + o1 + a.hd2);
#pragma unroll
    for (int j = 0; j < V; ++j) ss += x1[n][j] * x1[n][j] + x2[n][j] * x2[n][j];
  }
  const float inv = inv_rms(ss, a.D, a.eps);
  const TW* w = pick(a.w, which);
  T* orow = pick(a.out, which) + row * a.D;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const int64_t e = (int64_t(n) * blockDim.x + threadIdx.x) * V;
    if (e >= half) break;
    const int64_t h = e / a.hd2, i = e % a.hd2, o1 = h * 2 * a.hd2 + i, o2 = o1 + a.hd2;
    const int64_t to = (((a.broadcast ? 0 : b) * a.H + h) * a.T_ + t) * a.hd2 + i;
    float c[V], s[V], y1[V], y2[V];
    normalize<T, TW, V, Aligned>(x1[n], w, o1, inv);
    normalize<T, TW, V, Aligned>(x2[n], w, o2, inv);
    load_n<V, AC>(c, a.cos + to);
    load_n<V, AC>(s, a.sin + to);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      y1[j] = x1[n][j] * c[j] + (-s[j]) * x2[n][j];
      y2[j] = x2[n][j] * c[j] + s[j] * x1[n][j];
    }
    store_n<V, AT>(orow + o1, y1);
    store_n<V, AT>(orow + o2, y2);
  }
}

// Interleaved: in iteration n a thread rotates the V / 2 pairs (2i, 2i + 1) of the V elements from
// e = (n * blockDim + thread) * V.
template <typename T, typename TW, typename C, int V, bool Aligned, int N>
__global__ void __launch_bounds__(kThreads) norm_rope_interleaved_kernel(const NormRopeArgs<T, TW, C> a) {
  constexpr int AT = pack_width<T>(V, Aligned), AC = pack_width<C>(V, Aligned);
  const int which = static_cast<int>(blockIdx.x % a.count);
  const int64_t row = blockIdx.x / a.count, b = row / a.T_, t = row % a.T_;
  const T* xr = pick(a.x, which) + row * a.D;
  float v[N][V];
  float ss = 0.f;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const int64_t e = (int64_t(n) * blockDim.x + threadIdx.x) * V;
    if (e >= a.D) break;
    load_n<V, AT>(v[n], xr + e);
#pragma unroll
    for (int j = 0; j < V; ++j) ss += v[n][j] * v[n][j];
  }
  const float inv = inv_rms(ss, a.D, a.eps);
  const TW* w = pick(a.w, which);
  T* orow = pick(a.out, which) + row * a.D;
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const int64_t e = (int64_t(n) * blockDim.x + threadIdx.x) * V;
    if (e >= a.D) break;
    const int64_t to = ((a.broadcast ? 0 : b) * a.T_ + t) * a.D + e;
    float c[V], s[V], y[V];
    normalize<T, TW, V, Aligned>(v[n], w, e, inv);
    load_n<V, AC>(c, a.cos + to);
    load_n<V, AC>(s, a.sin + to);
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      y[j] = v[n][j] * c[j] + (-v[n][j + 1]) * s[j];
      y[j + 1] = v[n][j + 1] * c[j + 1] + v[n][j] * s[j + 1];
    }
    store_n<V, AT>(orow + e, y);
  }
}

bool aligned16(std::initializer_list<const void*> ptrs) {
  bool ok = true;
  for (const void* p : ptrs) ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  return ok;
}

// The row in 16-byte packs, a thread holding up to kPackedIterations of them; a row they do not cover
// (or not aligned to packs) goes in single elements (split) or pairs (interleaved), up to
// kElementIterations a thread.
constexpr int kPackedIterations = 4, kElementIterations = 32;

template <typename TX, typename TW, typename TC, int N>
void launch_packed(bool split, unsigned blocks, const NormRopeArgs<TX, TW, TC>& args) {
  constexpr int V = 16 / sizeof(TX);
  if (split)
    norm_rope_split_kernel<TX, TW, TC, V, true, N><<<blocks, kThreads>>>(args);
  else
    norm_rope_interleaved_kernel<TX, TW, TC, V, true, N><<<blocks, kThreads>>>(args);
}

// x (and k) [B, T, D] normed and rotated; the shared checks of both ops.
std::vector<Tensor> norm_rope(const std::vector<Tensor>& xs_in, const std::vector<Tensor>& ws_in, float eps,
                              const Tensor& cos_in, const Tensor& sin_in, int layout, const char* op) {
  const Tensor& x0 = xs_in[0];
  for (size_t i = 0; i < xs_in.size(); ++i) {
    const Tensor &x = xs_in[i], &w = ws_in[i];
    LTX2_CHECK(x.dim() == 3, "{}: x must be [B, T, dim], got {}", op, x.str());
    LTX2_CHECK(x.shape() == x0.shape() && x.dtype() == x0.dtype() && x.device() == x0.device(),
               "{}: q {} and k {} differ", op, x0.str(), x.str());
    LTX2_CHECK(!w.defined() || (w.numel() == x.size(2) && w.device() == x.device()), "{}: weight {} for x {}",
               op, w.str(), x.str());
    LTX2_CHECK(w.defined() == ws_in[0].defined() && (!w.defined() || w.dtype() == ws_in[0].dtype()),
               "{}: the weights {} and {} differ in kind", op, ws_in[0].str(), w.str());
  }
  LTX2_CHECK(cos_in.device() == x0.device() && sin_in.device() == x0.device(),
             "{}: tables {} / {} are not on x's device {}", op, cos_in.str(), sin_in.str(),
             x0.device().str());
  LTX2_CHECK(cos_in.shape() == sin_in.shape() && cos_in.dtype() == sin_in.dtype(),
             "{}: cos {} and sin {} differ", op, cos_in.str(), sin_in.str());
  use_device(x0);
  const int count = static_cast<int>(xs_in.size());
  std::vector<Tensor> xs, ws, outs;
  for (int i = 0; i < count; ++i) {
    xs.push_back(xs_in[i].contiguous());
    ws.push_back(ws_in[i].defined() ? ws_in[i].contiguous() : Tensor());
    outs.push_back(Tensor::empty(x0.shape(), x0.dtype(), x0.device()));
  }
  const Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  const int64_t B = x0.size(0), T = x0.size(1), D = x0.size(2), Bt = cos.dim() > 0 ? cos.size(0) : 0;
  LTX2_CHECK(Bt == 1 || Bt == B, "{}: tables {} do not fit x {}", op, cos.str(), x0.str());
  const bool split = layout == kSplitLayout;
  if (split)
    LTX2_CHECK(cos.dim() == 4 && cos.size(2) == T && cos.size(1) * cos.size(3) * 2 == D,
               "{}: split tables {} do not fit x {}", op, cos.str(), x0.str());
  else
    LTX2_CHECK(cos.dim() == 3 && cos.size(1) == T && cos.size(2) == D && D % 2 == 0,
               "{}: interleaved tables {} do not fit x {}", op, cos.str(), x0.str());
  const int64_t rows = B * T;
  if (rows == 0 || D == 0) return outs;
  const int64_t H = split ? cos.size(1) : 1, hd2 = split ? cos.size(3) : 0;
  dispatch_float(x0.dtype(), op, [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(ws[0].defined() ? ws[0].dtype() : x0.dtype(), op, [&](auto tw) {
      using TW = decltype(tw);
      dispatch_float(cos.dtype(), op, [&](auto tc) {
        using TC = decltype(tc);
        using Args = NormRopeArgs<TX, TW, TC>;
        Args args{};
        bool packed_addresses = aligned16({cos.data_ptr(), sin.data_ptr()});
        for (int i = 0; i < count; ++i) {
          args.x[i] = static_cast<const TX*>(xs[i].data_ptr());
          args.out[i] = static_cast<TX*>(outs[i].data_ptr());
          args.w[i] = ws[i].defined() ? static_cast<const TW*>(ws[i].data_ptr()) : nullptr;
          packed_addresses = packed_addresses && aligned16({args.x[i], args.out[i], args.w[i]});
        }
        args.cos = static_cast<const TC*>(cos.data_ptr());
        args.sin = static_cast<const TC*>(sin.data_ptr());
        args.count = count;
        args.T_ = T;
        args.D = D;
        args.H = H;
        args.hd2 = hd2;
        args.broadcast = Bt == 1;
        args.eps = eps;
        constexpr int V = 16 / sizeof(TX);
        const int64_t work = split ? D / 2 : D;  // pairs (split) or elements (interleaved) of a row
        auto iterations = [&](int64_t per_thread) {
          return (work + kThreads * per_thread - 1) / (kThreads * per_thread);
        };
        const auto blocks = static_cast<unsigned>(rows * count);
        if (packed_addresses && (split ? hd2 % V == 0 : D % V == 0) && iterations(V) <= kPackedIterations) {
          const int64_t n = iterations(V);
          if (n == 1)
            launch_packed<TX, TW, TC, 1>(split, blocks, args);
          else if (n == 2)
            launch_packed<TX, TW, TC, 2>(split, blocks, args);
          else
            launch_packed<TX, TW, TC, kPackedIterations>(split, blocks, args);
        } else {
          const int per = split ? 1 : 2;
          LTX2_CHECK(iterations(per) <= kElementIterations,
                     "{}: rows of {} elements are longer than it takes ({})", op, D,
                     int64_t(2) * kThreads * kElementIterations);
          if (split)
            norm_rope_split_kernel<TX, TW, TC, 1, false, kElementIterations><<<blocks, kThreads>>>(args);
          else
            norm_rope_interleaved_kernel<TX, TW, TC, 2, false, kElementIterations>
                <<<blocks, kThreads>>>(args);
        }
        check_launch();
      });
    });
  });
  return outs;
}

}  // namespace

Tensor rms_norm_rope(const Tensor& x, const Tensor& w, float eps, const Tensor& cos, const Tensor& sin,
                     int layout) {
  return norm_rope({x}, {w}, eps, cos, sin, layout, "rms_norm_rope")[0];
}

ops::NormedQk rms_norm_rope_qk(const Tensor& q, const Tensor& wq, const Tensor& k, const Tensor& wk,
                               float eps, const Tensor& cos, const Tensor& sin, int layout) {
  std::vector<Tensor> out = norm_rope({q, k}, {wq, wk}, eps, cos, sin, layout, "rms_norm_rope_qk");
  return {std::move(out[0]), std::move(out[1])};
}

}  // namespace ltx2::cuda
