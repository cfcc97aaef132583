// CUDA elementwise ops: broadcasting binary ops and unary activations on f32 and bf16 tensors,
// computed in float32. Binary ops promote like PyTorch (bf16 with f32 gives f32). Broadcast
// layouts are collapsed first (adjacent dims that are contiguous in every operand merge), so the
// common cases (same shape, a per-channel vector) index with one or two divisions per element.
#include <cmath>

#include "kernels/common.cuh"
#include "ops/elementwise.h"

namespace ltx2::cuda {

namespace {

constexpr int kMaxDims = 8;

struct BroadcastLayout {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t a_strides[kMaxDims];
  int64_t b_strides[kMaxDims];
};

// Drops size-1 dims and merges a dim into its inner neighbour when both operands allow it.
BroadcastLayout collapse(const Shape& shape, const Shape& sa, const Shape& sb) {
  Shape s, a, b;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!s.empty() && a.back() == sa[d] * shape[d] && b.back() == sb[d] * shape[d]) {
      s.back() *= shape[d];
      a.back() = sa[d];
      b.back() = sb[d];
      continue;
    }
    s.push_back(shape[d]);
    a.push_back(sa[d]);
    b.push_back(sb[d]);
  }
  LTX2_CHECK(s.size() <= static_cast<size_t>(kMaxDims),
             "binary op: broadcast of {} dims does not collapse to {}", s.size(), kMaxDims);
  BroadcastLayout l{};
  l.ndim = static_cast<int>(s.size());
  for (int d = 0; d < l.ndim; ++d) {
    l.shape[d] = s[d];
    l.a_strides[d] = a[d];
    l.b_strides[d] = b[d];
  }
  return l;
}

__device__ __forceinline__ float apply_binary(int op, float x, float y) {
  switch (op) {
    case int(ops::BinaryOp::Add): return x + y;
    case int(ops::BinaryOp::Sub): return x - y;
    case int(ops::BinaryOp::Mul): return x * y;
    case int(ops::BinaryOp::Div): return x / y;
    case int(ops::BinaryOp::Max): return fmaxf(x, y);
    default: return fminf(x, y);
  }
}

template <typename TA, typename TB, typename TO>
__global__ void binary_kernel(TO* out, const TA* a, const TB* b, BroadcastLayout l, int64_t n, int op) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, oa = 0, ob = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      int64_t c = rem % l.shape[d];
      rem /= l.shape[d];
      oa += c * l.a_strides[d];
      ob += c * l.b_strides[d];
    }
    out[i] = from_f<TO>(apply_binary(op, to_f(a[oa]), to_f(b[ob])));
  }
}

// Same-shape contiguous operands of one dtype (residual adds, the bulk of binary traffic): one
// 16-byte pack of each a thread per step.
template <typename T>
__global__ void binary_dense_kernel(T* out, const T* a, const T* b, int64_t packs, int op) {
  constexpr int V = 16 / sizeof(T);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x[V], y[V];
    load_pack<T, V>(x, a + i * V);
    load_pack<T, V>(y, b + i * V);
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = apply_binary(op, x[j], y[j]);
    store_pack<T, V>(out + i * V, x);
  }
}

// a [rows, inner] contiguous op b, where b holds one value per row (a per-head gate over the head's
// channels: b_col_stride 0) or one row shared or strided across rows (a per-channel modulation:
// b_col_stride 1). One 16-byte pack of a a thread per step.
template <typename T, bool kBRow>
__global__ void binary_2d_kernel(T* out, const T* a, const T* b, int64_t packs, int64_t packs_per_row,
                                 int64_t b_row_stride, int op) {
  constexpr int V = 16 / sizeof(T);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x[V], y[V];
    load_pack<T, V>(x, a + i * V);
    const int64_t row = i / packs_per_row;
    if constexpr (kBRow) {
      load_pack<T, V>(y, b + row * b_row_stride + (i - row * packs_per_row) * V);
    } else {
      const float value = to_f(b[row * b_row_stride]);
#pragma unroll
      for (int j = 0; j < V; ++j) y[j] = value;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = apply_binary(op, x[j], y[j]);
    store_pack<T, V>(out + i * V, x);
  }
}

// Whether the 2-d kernel can run: one dtype, a contiguous [rows, inner] with whole packs per row
// and aligned; b constant along inner, or contiguous along it with aligned rows.
bool two_d_fits(const Tensor& out, const Tensor& a, const Tensor& b, const BroadcastLayout& l) {
  const int64_t V = 16 / static_cast<int64_t>(dtype_size(a.dtype()));
  bool ok = a.dtype() == b.dtype() && l.ndim == 2 && l.a_strides[1] == 1 && l.a_strides[0] == l.shape[1] &&
            l.shape[1] % V == 0;
  for (const Tensor* t : {&out, &a}) ok = ok && reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0;
  const bool b_row =
      l.b_strides[1] == 1 && l.b_strides[0] % V == 0 && reinterpret_cast<uintptr_t>(b.data_ptr()) % 16 == 0;
  return ok && (l.b_strides[1] == 0 || b_row);
}

// Whether the dense kernel can run: one dtype, no broadcast, contiguous, aligned, whole packs.
bool dense_fits(const Tensor& out, const Tensor& a, const Tensor& b, const BroadcastLayout& l) {
  const int64_t V = 16 / static_cast<int64_t>(dtype_size(a.dtype()));
  bool ok = a.dtype() == b.dtype() && l.ndim == 1 && l.a_strides[0] == 1 && l.b_strides[0] == 1 &&
            out.numel() % V == 0;
  for (const Tensor* t : {&out, &a, &b}) ok = ok && reinterpret_cast<uintptr_t>(t->data_ptr()) % 16 == 0;
  return ok;
}

__device__ __forceinline__ float apply_unary(int op, float v, float alpha) {
  using U = ops::UnaryOp;
  switch (op) {
    case int(U::Neg): return -v;
    case int(U::Exp): return expf(v);
    case int(U::Log): return logf(v);
    case int(U::Sqrt): return sqrtf(v);
    case int(U::Rsqrt): return rsqrtf(v);
    case int(U::Abs): return fabsf(v);
    case int(U::Tanh): return tanhf(v);
    case int(U::Sigmoid): return 1.f / (1.f + expf(-v));
    case int(U::Silu): return v / (1.f + expf(-v));
    case int(U::GeluTanh): return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case int(U::GeluErf): return 0.5f * v * (1.f + erff(v * 0.7071067811865476f));
    case int(U::Relu): return v > 0.f ? v : 0.f;
    case int(U::LeakyRelu): return v >= 0.f ? v : v * alpha;
    case int(U::Sin): return sinf(v);
    case int(U::Cos): return cosf(v);
    case int(U::AddScalar): return v + alpha;
    case int(U::MulScalar): return v * alpha;
    case int(U::DivScalar): return v / alpha;
    default: return powf(v, alpha);
  }
}

template <typename T>
__global__ void unary_kernel(T* out, const T* x, int64_t n, int op, float alpha) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = from_f<T>(apply_unary(op, to_f(x[i]), alpha));
}

template <typename TA, typename TB>
void launch_binary(const Tensor& out, const Tensor& a, const Tensor& b, const BroadcastLayout& l, int op) {
  constexpr bool any_f32 = std::is_same_v<TA, float> || std::is_same_v<TB, float>;
  using TO = std::conditional_t<any_f32, float, bf16>;
  int64_t n = out.numel();
  binary_kernel<TA, TB, TO><<<grid_for(n, 256), 256>>>(static_cast<TO*>(out.data_ptr()),
                                                       static_cast<const TA*>(a.data_ptr()),
                                                       static_cast<const TB*>(b.data_ptr()), l, n, op);
  check_launch();
}

}  // namespace

Tensor binary(const Tensor& a, const Tensor& b, int op) {
  LTX2_CHECK(a.device() == b.device(), "binary op: operands on {} and {}", a.device().str(),
             b.device().str());
  Shape shape = ops::broadcast_shapes(a.shape(), b.shape());
  DType out_dtype = a.dtype() == DType::F32 || b.dtype() == DType::F32 ? DType::F32 : DType::BF16;
  Tensor ae = a.expand(shape), be = b.expand(shape);
  use_device(a);
  Tensor out = Tensor::empty(shape, out_dtype, a.device());
  if (out.numel() == 0) return out;
  BroadcastLayout l = collapse(shape, ae.strides(), be.strides());
  if (dense_fits(out, ae, be, l)) {
    dispatch_float(a.dtype(), "binary op", [&](auto t) {
      using T = decltype(t);
      const int64_t packs = out.numel() / (16 / static_cast<int64_t>(sizeof(T)));
      binary_dense_kernel<T><<<grid_for(packs, 256), 256>>>(static_cast<T*>(out.data_ptr()),
                                                            static_cast<const T*>(ae.data_ptr()),
                                                            static_cast<const T*>(be.data_ptr()), packs, op);
      check_launch();
    });
    return out;
  }
  if (two_d_fits(out, ae, be, l)) {
    dispatch_float(a.dtype(), "binary op", [&](auto t) {
      using T = decltype(t);
      const int64_t V = 16 / static_cast<int64_t>(sizeof(T)), packs = out.numel() / V;
      auto* o = static_cast<T*>(out.data_ptr());
      auto *pa = static_cast<const T*>(ae.data_ptr()), *pb = static_cast<const T*>(be.data_ptr());
      if (l.b_strides[1] == 0)
        binary_2d_kernel<T, false>
            <<<grid_for(packs, 256), 256>>>(o, pa, pb, packs, l.shape[1] / V, l.b_strides[0], op);
      else
        binary_2d_kernel<T, true>
            <<<grid_for(packs, 256), 256>>>(o, pa, pb, packs, l.shape[1] / V, l.b_strides[0], op);
      check_launch();
    });
    return out;
  }
  dispatch_float(a.dtype(), "binary op", [&](auto ta) {
    dispatch_float(b.dtype(), "binary op",
                   [&](auto tb) { launch_binary<decltype(ta), decltype(tb)>(out, ae, be, l, op); });
  });
  return out;
}

Tensor unary(const Tensor& x, int op, float alpha) {
  use_device(x);
  Tensor xc = x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  int64_t n = x.numel();
  if (n == 0) return out;
  dispatch_float(x.dtype(), "unary op", [&](auto t) {
    using T = decltype(t);
    unary_kernel<T><<<grid_for(n, 256), 256>>>(static_cast<T*>(out.data_ptr()),
                                               static_cast<const T*>(xc.data_ptr()), n, op, alpha);
    check_launch();
  });
  return out;
}

}  // namespace ltx2::cuda
