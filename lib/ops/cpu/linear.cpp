// CPU matrix products: float32, row-major. C = A·Bᵀ with both operands read along K: a
// register-blocked kernel computes up to kRows rows of C against one row of B at a time, so each B
// row streamed from memory serves kRows rows of A (held in cache) instead of one; threads take
// (row block, column block) pairs.
//
// Every C[m, n] is summed the same way whichever block it falls in (4 lanes over K in order, the
// lanes added pairwise, then the K % 4 tail, then the bias), so a row's result does not depend on M
// or on the thread count: sequence parallel shards of the tokens give the single rank's bits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/elementwise.h"
#include "ops/fp8_quantize.h"

namespace ltx2::ops::cpu {

namespace {

typedef float Lanes __attribute__((vector_size(16)));

inline Lanes load_lanes(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// C[r, n] for R rows of A (rows `a`, stride K) against one row b of B.
template <int R>
void dot_rows(const float* a, const float* b, int64_t K, float bias, float* c, int64_t ldc) {
  Lanes acc[R] = {};
  const int64_t K4 = K / 4 * 4;
  for (int64_t k = 0; k < K4; k += 4) {
    const Lanes bk = load_lanes(b + k);
    for (int r = 0; r < R; ++r) acc[r] += load_lanes(a + r * K + k) * bk;
  }
  for (int r = 0; r < R; ++r) {
    float s = (acc[r][0] + acc[r][1]) + (acc[r][2] + acc[r][3]);
    for (int64_t k = K4; k < K; ++k) s += a[r * K + k] * b[k];
    c[r * ldc] = s + bias;
  }
}

constexpr int kRows = 8;
constexpr int64_t kBlockN = 64;

template <int R>
void row_block(const float* A, const float* B, const float* bias, float* C, int64_t N, int64_t K, int64_t n0,
               int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) dot_rows<R>(A, B + n * K, K, bias ? bias[n] : 0.f, C + n, N);
}

using RowBlockFn = void (*)(const float*, const float*, const float*, float*, int64_t, int64_t, int64_t,
                            int64_t);
constexpr RowBlockFn kRowBlock[kRows + 1] = {nullptr,      row_block<1>, row_block<2>,
                                             row_block<3>, row_block<4>, row_block<5>,
                                             row_block<6>, row_block<7>, row_block<8>};

// C[m, n] = sum_k A[m, k] * B[n, k] (+ bias[n]); A [M, K], B [N, K], C [M, N], all contiguous.
void gemm_abt(const float* A, const float* B, const float* bias, float* C, int64_t M, int64_t N, int64_t K) {
  const int64_t mblocks = (M + kRows - 1) / kRows, nblocks = (N + kBlockN - 1) / kBlockN;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (M * N * K > 32768)
  for (int64_t mb = 0; mb < mblocks; ++mb) {
    for (int64_t nb = 0; nb < nblocks; ++nb) {
      const int64_t m0 = mb * kRows, rows = std::min<int64_t>(kRows, M - m0);
      const int64_t n0 = nb * kBlockN, n1 = std::min(N, n0 + kBlockN);
      kRowBlock[rows](A + m0 * K, B, bias, C + m0 * N, N, K, n0, n1);
    }
  }
}

void require_f32(const Tensor& t, const char* op) {
  LTX2_CHECK(t.dtype() == DType::F32, "{}: CPU path takes f32 tensors, got {}", op, t.str());
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (any_bf16({&x, &w, &bias})) return cpu::linear(widen(x), widen(w), widen(bias)).to(x.dtype());
  require_f32(x, "linear");
  require_f32(w, "linear");
  LTX2_CHECK(w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1),
             "linear: input {} does not match weight {}", x.str(), w.str());
  int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
  if (bias.defined()) LTX2_CHECK(bias.numel() == N, "linear: bias {} for {} outputs", bias.str(), N);
  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Shape out_shape = x.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape);
  gemm_abt(xc.data<float>(), wc.data<float>(), bc.defined() ? bc.data<float>() : nullptr, y.data<float>(), M,
           N, K);
  return y;
}

Tensor linear_fp8(const Tensor& x, const Fp8Linear& w, bool gelu_tanh) {
  LTX2_CHECK(w.weight.dtype() == DType::F8E4M3 && w.weight.dim() == 2,
             "linear_fp8: the weight must be an F8_E4M3 matrix, got {}", w.weight.str());
  for (const Tensor* scale : {&w.weight_scale, &w.input_scale})
    LTX2_CHECK(scale->defined() && scale->numel() == 1 && scale->dtype() == DType::F32,
               "linear_fp8: scales must be float32 scalars, got {}",
               scale->defined() ? scale->str() : "none");
  LTX2_CHECK(x.dim() >= 1 && x.size(-1) == w.weight.size(1), "linear_fp8: input {} does not match weight {}",
             x.str(), w.weight.str());
  const float input_scale = w.input_scale.item();
  Tensor q = x;
  if (x.dtype() != DType::F8E4M3) {
    const Tensor xf = widen(x).contiguous();
    q = Tensor::empty(x.shape(), DType::F8E4M3);
    const float* src = xf.data<float>();
    uint8_t* dst = static_cast<uint8_t*>(q.data_ptr());
    const float inverse = 1.f / input_scale;
    const int64_t n = xf.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dst[i] = quantize_f8e4m3(src[i], inverse);
  }
  // The float32 product of the dequantized operands equals the scaled FP8 product up to float32
  // rounding (every e4m3 value and its products are exact in float32).
  const Tensor y =
      cpu::linear(q.to_scaled(DType::F32, input_scale), w.weight.to_scaled(DType::F32, w.weight_scale.item()),
                  w.bias.defined() ? widen(w.bias) : Tensor());
  const Tensor out = gelu_tanh ? ops::gelu_tanh(y) : y;
  return x.dtype() == DType::BF16 ? out.to(DType::BF16) : out;
}

Fp8Rows quantize_rows_f8e4m3(const Tensor& x) {
  const Tensor xf = widen(x).contiguous();
  const int64_t K = x.size(-1), rows = x.numel() / K;
  Fp8Rows out{Tensor::empty(x.shape(), DType::F8E4M3), Tensor::empty({rows}), x.dtype()};
  const float* src = xf.data<float>();
  uint8_t* codes = static_cast<uint8_t*>(out.codes.data_ptr());
  float* scales = out.scales.data<float>();
#pragma omp parallel for schedule(static) if (rows * K > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = src + r * K;
    float amax = 0.f;
    for (int64_t i = 0; i < K; ++i) amax = std::fmax(amax, std::fabs(row[i]));
    const float scale = row_scale_f8e4m3(amax), inverse = 1.f / scale;
    for (int64_t i = 0; i < K; ++i) codes[r * K + i] = quantize_f8e4m3(row[i], inverse);
    scales[r] = scale;
  }
  return out;
}

Tensor linear_fp8_rows(const Fp8Rows& x, const Fp8Linear& w, bool gelu_tanh) {
  // The float32 product of the dequantized operands: each code times its row's (channel's) scale,
  // rounded once to float32, where the GPU scales the exact code products' sum instead.
  const int64_t K = x.codes.size(-1), rows = x.codes.numel() / K;
  const Tensor xq = ops::mul(x.codes.to(DType::F32).view({rows, K}), x.scales.view({rows, 1}));
  const Tensor wq = ops::mul(w.weight.to(DType::F32), w.weight_scale.view({-1, 1}));
  Tensor y = cpu::linear(xq, wq, w.bias.defined() ? widen(w.bias) : Tensor());
  if (gelu_tanh) y = ops::gelu_tanh(y);
  Shape shape = x.codes.shape();
  shape.back() = w.weight.size(0);
  return y.view(shape).to(x.dtype);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (any_bf16({&a, &b})) return cpu::matmul(widen(a), widen(b)).to(a.dtype());
  require_f32(a, "matmul");
  require_f32(b, "matmul");
  LTX2_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2),
             "matmul: shapes {} and {} do not chain", a.str(), b.str());
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  int64_t batch = a.numel() / (M * K);
  bool shared_b = b.dim() == 2;
  LTX2_CHECK(shared_b || b.numel() / (K * N) == batch, "matmul: batch of {} and {} differ", a.str(), b.str());
  Tensor ac = a.contiguous();
  // B transposed to [.., N, K] so the kernel reads both operands along K.
  Tensor bt = b.transpose(-1, -2).contiguous();
  Shape out_shape = a.shape();
  out_shape.back() = N;
  Tensor y = Tensor::empty(out_shape);
  for (int64_t i = 0; i < batch; ++i) {
    gemm_abt(ac.data<float>() + i * M * K, bt.data<float>() + (shared_b ? 0 : i * N * K), nullptr,
             y.data<float>() + i * M * N, M, N, K);
  }
  return y;
}

}  // namespace ltx2::ops::cpu
