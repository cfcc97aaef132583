// CUDA RoPE application (ops::apply_rope): rotates x [B, T, dim] (f32 or bf16) by float cos/sin tables
// formed on the CPU (ops/cpu/rope.cpp), one thread per rotated pair, float32 arithmetic, output in
// x's dtype. Split tables are [Bt, H, T, dim/(2H)] (per head: first half with second half),
// interleaved tables [Bt, T, dim] (pairs 2i, 2i+1); Bt is 1 (broadcast over the batch) or B.
#include "kernels/common.cuh"

namespace ltx2::cuda {

namespace {

constexpr int kSplitLayout = 0;  // ops::RopeLayout::Split; Interleaved is 1

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
