// CUDA RoPE: the cos/sin tables formed from device positions (ops::rope_tables, one thread per
// table entry, the CPU's float32 angle steps, cos/sin evaluated in double and rounded to float so
// that they match the CPU's correctly rounded cosf/sinf; the frequency grid comes from the host as
// a kernel argument, so forming the tables copies nothing and never waits for the device), and
// their application (ops::apply_rope): rotates x [B, T, dim] (f32 or bf16) by float cos/sin tables,
// one thread per rotated pair, float32 arithmetic, output in x's dtype. Split tables are [Bt, H, T, dim/(2H)]
// (per head: first half with second half), interleaved tables [Bt, T, dim] (pairs 2i, 2i+1); Bt is 1
// (broadcast over the batch) or B.
#include "kernels/common.cuh"
#include "ops/rope.h"

namespace ltx2::cuda {

namespace {

constexpr int kSplitLayout = 0;  // ops::RopeLayout::Split; Interleaved is 1

// The host-formed frequency grid and position normalisers, passed by value to the table kernel.
constexpr int kMaxGrid = 2048, kMaxAxes = 4;
struct GridArgs {
  float grid[kMaxGrid];
  float max_pos[kMaxAxes];
  int64_t F, n;
};

// Entry j (of dim/2 split or dim interleaved) of token (b, t): 1/0 in the padding, else
// cos/sin(grid[f] * ((p / max_pos[a]) * 2 - 1)) with k = j - pad (split) or (j - pad) / 2, f = k / n,
// a = k % n, p the interval's midpoint (start + end) / 2 or the point.
__global__ void rope_tables_kernel(float* cos, float* sin, const float* pos,
                                   const __grid_constant__ GridArgs g, int64_t entries, int64_t T_,
                                   int64_t width, int64_t pad, bool split, int64_t H, int64_t hd2,
                                   bool intervals) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < entries;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = e % width, bt = e / width, t = bt % T_, b = bt / T_;
    // split tables are [B, H, T, hd2]: entry j of the token sits in head j / hd2.
    const int64_t o = split ? ((b * H + j / hd2) * T_ + t) * hd2 + j % hd2 : e;
    if (j < pad) {
      cos[o] = 1.f;
      sin[o] = 0.f;
      continue;
    }
    const int64_t k = split ? j - pad : (j - pad) / 2, f = k / g.n, a = k % g.n;
    float x;
    if (intervals) {
      const float* se = pos + ((b * g.n + a) * T_ + t) * 2;
      x = __fdiv_rn(__fadd_rn(se[0], se[1]), 2.f);
    } else {
      x = pos[(b * g.n + a) * T_ + t];
    }
    const float u = __fsub_rn(__fmul_rn(__fdiv_rn(x, g.max_pos[a]), 2.f), 1.f);
    const float angle = __fmul_rn(g.grid[f], u);
    double s, c;
    ::sincos(static_cast<double>(angle), &s, &c);
    cos[o] = static_cast<float>(c);
    sin[o] = static_cast<float>(s);
  }
}

template <typename T, typename C>
__global__ void rope_split_kernel(T* out, const T* x, const C* cos, const C* sin, int64_t pairs, int64_t T_,
                                  int64_t H, int64_t hd2, bool broadcast) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p % hd2, h = (p / hd2) % H, bt = p / (hd2 * H), t = bt % T_, b = bt / T_;
    const int64_t xo = bt * H * 2 * hd2 + h * 2 * hd2 + i;
    const int64_t to = (((broadcast ? 0 : b) * H + h) * T_ + t) * hd2 + i;
    const float c = to_f(cos[to]), s = to_f(sin[to]);
    const float x1 = to_f(x[xo]), x2 = to_f(x[xo + hd2]);
    out[xo] = from_f<T>(x1 * c + (-s) * x2);
    out[xo + hd2] = from_f<T>(x2 * c + s * x1);
  }
}

template <typename T, typename C>
__global__ void rope_interleaved_kernel(T* out, const T* x, const C* cos, const C* sin, int64_t pairs,
                                        int64_t T_, int64_t D, bool broadcast) {
  const int64_t half = D / 2;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = 2 * (p % half), bt = p / half, t = bt % T_, b = bt / T_;
    const int64_t xo = bt * D + j, to = ((broadcast ? 0 : b) * T_ + t) * D + j;
    const float x0 = to_f(x[xo]), x1 = to_f(x[xo + 1]);
    out[xo] = from_f<T>(x0 * to_f(cos[to]) + (-x1) * to_f(sin[to]));
    out[xo + 1] = from_f<T>(x1 * to_f(cos[to + 1]) + x0 * to_f(sin[to + 1]));
  }
}

}  // namespace

ops::RopeTables rope_tables(const Tensor& positions, const Tensor& grid_host, const ops::RopeSpec& spec) {
  use_device(positions);
  const Tensor pos = positions.to(DType::F32).contiguous();
  const bool intervals = pos.dim() == 4;
  const int64_t B = pos.size(0), n = pos.size(1), T = pos.size(2), F = grid_host.size(0);
  LTX2_CHECK(F <= kMaxGrid && n <= kMaxAxes,
             "rope_tables: the CUDA path takes up to {} frequencies and {} "
             "axes, got {} and {}",
             kMaxGrid, kMaxAxes, F, n);
  GridArgs g{};
  for (int64_t i = 0; i < F; ++i) g.grid[i] = grid_host.data<float>()[i];
  for (int64_t a = 0; a < n; ++a) g.max_pos[a] = static_cast<float>(spec.max_pos[a]);
  g.F = F;
  g.n = n;
  ops::RopeTables out;
  out.layout = spec.layout;
  const bool split = spec.layout == ops::RopeLayout::Split;
  const int64_t width = split ? spec.dim / 2 : spec.dim;
  const int64_t pad = split ? width - F * n : spec.dim % (2 * n);
  const int64_t H = split ? spec.heads : 1, hd2 = split ? width / H : 0;
  const Shape shape = split ? Shape{B, H, T, hd2} : Shape{B, T, spec.dim};
  out.cos = Tensor::empty(shape, DType::F32, pos.device());
  out.sin = Tensor::empty(shape, DType::F32, pos.device());
  const int64_t entries = B * T * width;
  if (entries == 0) return out;
  constexpr int kThreads = 256;
  rope_tables_kernel<<<grid_for(entries, kThreads), kThreads>>>(
      static_cast<float*>(out.cos.data_ptr()), static_cast<float*>(out.sin.data_ptr()),
      static_cast<const float*>(pos.data_ptr()), g, entries, T, width, pad, split, H, hd2, intervals);
  check_launch();
  return out;
}

Tensor apply_rope(const Tensor& x_in, const Tensor& cos_in, const Tensor& sin_in, int layout) {
  LTX2_CHECK(x_in.dim() == 3, "apply_rope: x must be [B, T, dim], got {}", x_in.str());
  LTX2_CHECK(cos_in.device() == x_in.device() && sin_in.device() == x_in.device(),
             "apply_rope: tables {} / {} are not on x's device {}", cos_in.str(), sin_in.str(),
             x_in.device().str());
  LTX2_CHECK(cos_in.shape() == sin_in.shape() && cos_in.dtype() == sin_in.dtype(),
             "apply_rope: cos {} and sin {} differ", cos_in.str(), sin_in.str());
  use_device(x_in);
  const Tensor x = x_in.contiguous(), cos = cos_in.contiguous(), sin = sin_in.contiguous();
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2), Bt = cos.size(0);
  LTX2_CHECK(Bt == 1 || Bt == B, "apply_rope: tables {} do not fit x {}", cos.str(), x.str());
  const bool split = layout == kSplitLayout;
  if (split)
    LTX2_CHECK(cos.dim() == 4 && cos.size(2) == T && cos.size(1) * cos.size(3) * 2 == D,
               "apply_rope: split tables {} do not fit x {}", cos.str(), x.str());
  else
    LTX2_CHECK(cos.dim() == 3 && cos.size(1) == T && cos.size(2) == D && D % 2 == 0,
               "apply_rope: interleaved tables {} do not fit x {}", cos.str(), x.str());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  const int64_t pairs = B * T * D / 2;
  if (pairs == 0) return out;
  constexpr int kThreads = 256;
  dispatch_float(x.dtype(), "apply_rope", [&](auto tx) {
    using TX = decltype(tx);
    dispatch_float(cos.dtype(), "apply_rope tables", [&](auto tc) {
      using TC = decltype(tc);
      auto* o = static_cast<TX*>(out.data_ptr());
      auto* xp = static_cast<const TX*>(x.data_ptr());
      auto* cp = static_cast<const TC*>(cos.data_ptr());
      auto* sp = static_cast<const TC*>(sin.data_ptr());
      if (split)
        rope_split_kernel<TX, TC><<<grid_for(pairs, kThreads), kThreads>>>(o, xp, cp, sp, pairs, T,
                                                                           cos.size(1), cos.size(3), Bt == 1);
      else
        rope_interleaved_kernel<TX, TC>
            <<<grid_for(pairs, kThreads), kThreads>>>(o, xp, cp, sp, pairs, T, D, Bt == 1);
      check_launch();
    });
  });
  return out;
}

}  // namespace ltx2::cuda
