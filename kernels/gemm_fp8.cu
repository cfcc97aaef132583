// CUDA FP8 linears (ops/linear.h). linear_fp8: the activation quantized to F8_E4M3 with the static
// input scale (one pass, ops/fp8_quantize.h's rule, so the codes equal the CPU's), then cuBLASLt's
// FP8 GEMM (gemm.cu) with the weight and input scales read by pointer on the device, bias and GELU
// in its epilogue; the quantized activation is a temporary of the stream-ordered allocator.
// quantize_rows_f8e4m3: one block per row, its largest magnitude then its codes, the row held in
// registers between the two (read once). linear_fp8_rows: the same GEMM with cuBLASLt's outer-vector scales
// (a scale per output channel times a scale per row).
#include <algorithm>

#include "kernels/common.cuh"
#include "kernels/gemm.cuh"
#include "ops/fp8_quantize.h"
#include "ops/linear.h"

namespace ltx2::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;  // one 16-byte load of bf16, 8 bytes stored

// q[i] = quantize(x[i], 1 / *scale) over n elements; x and q contiguous, q freshly allocated (so
// aligned); packed loads of x only when `packed` (x aligned to a pack).
template <typename T>
__global__ void quantize_f8e4m3_kernel(const T* x, uint8_t* q, const float* scale, int64_t n, bool packed) {
  const float inverse = 1.f / *scale;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kPerThread;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPerThread; i < n;
       i += stride) {
    if (packed && i + kPerThread <= n) {
      float v[kPerThread];
      load_pack<T, kPerThread>(v, x + i);
      Pack<uint8_t, kPerThread> out;
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) out.v[j] = ops::quantize_f8e4m3(v[j], inverse);
      *reinterpret_cast<Pack<uint8_t, kPerThread>*>(q + i) = out;
    } else {
      const int64_t end = i + kPerThread < n ? i + kPerThread : n;
      for (int64_t j = i; j < end; ++j) q[j] = ops::quantize_f8e4m3(to_f(x[j]), inverse);
    }
  }
}

// Rows of K elements: codes[r, :] and scales[r] as ops/fp8_quantize.h (row_scale_f8e4m3 of the
// row's largest magnitude); V elements per access (V = 1 when rows are not whole aligned packs).
// Each thread keeps its first kHeld packs in registers between the max and the quantizing pass, so
// a row is read from memory once when the block has K / (V · kHeld) threads (quantize_rows_f8e4m3's
// launch); packs past them, in rows wider than 1,024 threads hold, are read again.
constexpr int kHeld = 4;

template <typename T, int V>
__global__ void quantize_rows_kernel(const T* x, uint8_t* codes, float* scales, int64_t K) {
  __shared__ float scratch[32];
  const T* row = x + blockIdx.x * K;
  uint8_t* out = codes + blockIdx.x * K;
  const int64_t step = int64_t(blockDim.x) * V, first = int64_t(threadIdx.x) * V;
  float held[kHeld][V];
  float amax = 0.f;
#pragma unroll
  for (int p = 0; p < kHeld; ++p) {
    if (first + p * step >= K) break;
    load_pack<T, V>(held[p], row + first + p * step);
#pragma unroll
    for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(held[p][j]));
  }
  for (int64_t i = first + kHeld * step; i < K; i += step) {
    float v[V];
    load_pack<T, V>(v, row + i);
#pragma unroll
    for (int j = 0; j < V; ++j) amax = fmaxf(amax, fabsf(v[j]));
  }
  amax = block_reduce(
      amax, scratch, [](float v) { return warp_max(v); }, 0.f);
  const float s = ops::row_scale_f8e4m3(amax), inverse = 1.f / s;
  auto store = [&](const float(&v)[V], int64_t i) {
    Pack<uint8_t, V> q;
#pragma unroll
    for (int j = 0; j < V; ++j) q.v[j] = ops::quantize_f8e4m3(v[j], inverse);
    *reinterpret_cast<Pack<uint8_t, V>*>(out + i) = q;
  };
#pragma unroll
  for (int p = 0; p < kHeld; ++p) {
    if (first + p * step >= K) break;
    store(held[p], first + p * step);
  }
  for (int64_t i = first + kHeld * step; i < K; i += step) {
    float v[V];
    load_pack<T, V>(v, row + i);
    store(v, i);
  }
  if (threadIdx.x == 0) scales[blockIdx.x] = s;
}

// Threads for rows of K elements in packs of V: enough for kHeld packs each, whole warps, <= 1,024.
int quantize_threads(int64_t K, int V) {
  const int64_t per_thread = int64_t(V) * kHeld;
  const int64_t warps = ((K + per_thread - 1) / per_thread + 31) / 32;
  return static_cast<int>(std::clamp<int64_t>(warps, 1, 32) * 32);
}

const float* scalar_pointer(const Tensor& scale, const Tensor& x, const char* what) {
  LTX2_CHECK(
      scale.defined() && scale.numel() == 1 && scale.dtype() == DType::F32 && scale.device() == x.device(),
      "linear_fp8: the {} must be a float32 scalar on {}, got {}", what, x.device().str(),
      scale.defined() ? scale.str() : "none");
  return static_cast<const float*>(scale.data_ptr());
}

// The weight's checks both FP8 linears share, against an input of `K` features on `device`.
void check_fp8_weight(const ops::Fp8Linear& w, int64_t K, Device device) {
  const Tensor& w8 = w.weight;
  LTX2_CHECK(w8.dtype() == DType::F8E4M3 && w8.dim() == 2 && w8.device() == device,
             "linear_fp8: the weight must be an F8_E4M3 matrix on {}, got {}", device.str(), w8.str());
  LTX2_CHECK(K == w8.size(1), "linear_fp8: {} input features do not match weight {}", K, w8.str());
  // cuBLASLt's FP8 kernels take 16-byte aligned rows of the 8-bit operands and of the output.
  LTX2_CHECK(K % 16 == 0 && w8.size(0) % 16 == 0,
             "linear_fp8: in ({}) and out ({}) features must be multiples of 16", K, w8.size(0));
  if (w.bias.defined())
    LTX2_CHECK(w.bias.numel() == w8.size(0) && w.bias.device() == device,
               "linear_fp8: bias {} for {} outputs", w.bias.str(), w8.size(0));
}

// y [..., N] in `out_dtype` = codes [..., K] · weightᵀ through cuBLASLt, the accumulator scaled by
// a_scale (the weight's) and b_scale (the input's): scalars on the device, or with `outer_vectors`
// one per output channel and one per row; bias and GELU in the epilogue. The weight is checked.
Tensor fp8_gemm(const Tensor& codes, const ops::Fp8Linear& w, DType out_dtype, const float* a_scale,
                const float* b_scale, bool outer_vectors, bool gelu_tanh) {
  const Tensor wc = w.weight.contiguous();
  const int64_t K = wc.size(1), N = wc.size(0), M = K ? codes.numel() / K : 0;
  Shape out_shape = codes.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape, out_dtype, codes.device());
  if (M == 0) return y;
  const Tensor bias = w.bias.defined() ? w.bias.to(DType::BF16).contiguous() : Tensor();  // gemm.cuh
  GemmParams p = linear_params(DType::F8E4M3, out_dtype, wc.data_ptr(), codes.data_ptr(), y.data_ptr(), M, N,
                               K, bias.defined() ? bias.data_ptr() : nullptr, gelu_tanh);
  p.a_scale = a_scale;
  p.b_scale = b_scale;
  p.outer_vector_scales = outer_vectors;
  gemm(y, p);
  return y;
}

}  // namespace

Tensor linear_fp8(const Tensor& x, const ops::Fp8Linear& w, bool gelu_tanh) {
  LTX2_CHECK(x.dim() >= 1, "linear_fp8: input {} has no feature dimension", x.str());
  check_fp8_weight(w, x.size(-1), x.device());
  const float* weight_scale = scalar_pointer(w.weight_scale, x, "weight scale");
  const float* input_scale = scalar_pointer(w.input_scale, x, "input scale");
  LTX2_CHECK(x.dtype() == DType::BF16 || x.dtype() == DType::F32 || x.dtype() == DType::F8E4M3,
             "linear_fp8: the input must be bf16, f32 or F8_E4M3, got {}", x.str());
  const DType out_dtype = x.dtype() == DType::BF16 ? DType::BF16 : DType::F32;
  use_device(x);
  Tensor q = x.contiguous();
  if (q.dtype() != DType::F8E4M3 && q.numel() > 0) {
    const Tensor src = q;
    q = Tensor::empty(x.shape(), DType::F8E4M3, x.device());
    const int64_t n = src.numel();
    const int blocks =
        static_cast<int>(std::min<int64_t>((n + kThreads * kPerThread - 1) / (kThreads * kPerThread), 65535));
    dispatch_float(src.dtype(), "linear_fp8", [&](auto t) {
      using T = decltype(t);
      const bool packed = reinterpret_cast<uintptr_t>(src.data_ptr()) % (sizeof(T) * kPerThread) == 0;
      quantize_f8e4m3_kernel<T><<<blocks, kThreads>>>(
          static_cast<const T*>(src.data_ptr()), static_cast<uint8_t*>(q.data_ptr()), input_scale, n, packed);
    });
    check_launch();
  }
  return fp8_gemm(q, w, out_dtype, weight_scale, input_scale, false, gelu_tanh);
}

ops::Fp8Rows quantize_rows_f8e4m3(const Tensor& x_in) {
  use_device(x_in);
  const Tensor x = x_in.contiguous();
  const int64_t K = x.size(-1), rows = x.numel() / K;
  LTX2_CHECK(rows <= 0x7fffffff, "quantize_rows_f8e4m3: {} rows are more than one grid", rows);
  ops::Fp8Rows out{Tensor::empty(x.shape(), DType::F8E4M3, x.device()),
                   Tensor::empty({rows}, DType::F32, x.device()), x.dtype()};
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "quantize_rows_f8e4m3", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = 16 / sizeof(T);
    const auto* xp = static_cast<const T*>(x.data_ptr());
    auto* codes = static_cast<uint8_t*>(out.codes.data_ptr());
    auto* scales = static_cast<float*>(out.scales.data_ptr());
    if (K % V == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0)
      quantize_rows_kernel<T, V>
          <<<static_cast<unsigned>(rows), quantize_threads(K, V)>>>(xp, codes, scales, K);
    else
      quantize_rows_kernel<T, 1>
          <<<static_cast<unsigned>(rows), quantize_threads(K, 1)>>>(xp, codes, scales, K);
    check_launch();
  });
  return out;
}

Tensor linear_fp8_rows(const ops::Fp8Rows& x, const ops::Fp8Linear& w, bool gelu_tanh) {
  // The public op (ops/linear.cpp) checked the rows' scales and the per-channel weight scale.
  check_fp8_weight(w, x.codes.size(-1), x.codes.device());
  use_device(x.codes);
  const Tensor weight_scale = w.weight_scale.contiguous(), scales = x.scales.contiguous();
  // The weight's scale is one per output channel (m), the input's one per row (n).
  return fp8_gemm(x.codes, w, x.dtype, static_cast<const float*>(weight_scale.data_ptr()),
                  static_cast<const float*>(scales.data_ptr()), true, gelu_tanh);
}

}  // namespace ltx2::cuda
