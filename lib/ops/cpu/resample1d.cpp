// CPU filtered resampling. Each channel row is replicate-padded into a scratch row, then filtered;
// rows are independent tasks.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {

// Below this many multiply-adds a parallel region costs more than it saves (on a busy machine a
// worker may not be scheduled for milliseconds).
constexpr int64_t kParallelWork = int64_t{1} << 21;

struct Rows {
  Tensor x, filter;
  int64_t rows, length, taps;
};

Rows prepare(const Tensor& x, const Tensor& filter, const char* op) {
  LTX2_CHECK(x.dtype() == DType::F32 && filter.dtype() == DType::F32, "{}: f32 expected, got {} and {}", op,
             x.str(), filter.str());
  LTX2_CHECK(x.dim() == 3 && x.size(2) > 0, "{}: input {} must be [B, C, L] with L > 0", op, x.str());
  LTX2_CHECK(filter.numel() > 0, "{}: empty filter", op);
  Tensor xc = x.contiguous();
  return {xc, filter.contiguous(), x.size(0) * x.size(1), x.size(2), filter.numel()};
}

// row[-pad_left .. L + pad_right) with the edge samples repeated.
void replicate_pad(const float* row, int64_t L, int64_t pad_left, int64_t pad_right, float* out) {
  std::fill(out, out + pad_left, row[0]);
  std::copy(row, row + L, out + pad_left);
  std::fill(out + pad_left + L, out + pad_left + L + pad_right, row[L - 1]);
}

}  // namespace

Tensor upsample1d(const Tensor& x, const Tensor& filter, int64_t ratio, int64_t pad, int64_t crop_left,
                  int64_t crop_right) {
  if (any_bf16({&x, &filter}))
    return cpu::upsample1d(widen(x), widen(filter), ratio, pad, crop_left, crop_right).to(x.dtype());
  Rows r = prepare(x, filter, "upsample1d");
  LTX2_CHECK(ratio >= 1 && pad >= 0 && crop_left >= 0 && crop_right >= 0,
             "upsample1d: bad arguments (ratio {}, pad {}, crop {}/{})", ratio, pad, crop_left, crop_right);
  const int64_t Lp = r.length + 2 * pad, K = r.taps;
  const int64_t full = (Lp - 1) * ratio + K, Lout = full - crop_left - crop_right;
  LTX2_CHECK(Lout > 0, "upsample1d: cropping {}+{} leaves nothing of {}", crop_left, crop_right, x.str());
  Tensor y = Tensor::empty({x.size(0), x.size(1), Lout});
  const float* xp = r.x.data<float>();
  const float* h = r.filter.data<float>();
  float* yp = y.data<float>();
  const float gain = static_cast<float>(ratio);

#pragma omp parallel if (r.rows * full * K > kParallelWork)
  {
    std::vector<float> padded(Lp), acc(full);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < r.rows; ++row) {
      replicate_pad(xp + row * r.length, r.length, pad, pad, padded.data());
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t t = 0; t < Lp; ++t) {
        const float v = padded[t];
        float* dst = acc.data() + t * ratio;
        for (int64_t k = 0; k < K; ++k) dst[k] += v * h[k];
      }
      float* out = yp + row * Lout;
      for (int64_t t = 0; t < Lout; ++t) out[t] = gain * acc[crop_left + t];
    }
  }
  return y;
}

Tensor lowpass_downsample1d(const Tensor& x, const Tensor& filter, int64_t stride, int64_t pad_left,
                            int64_t pad_right) {
  if (any_bf16({&x, &filter}))
    return cpu::lowpass_downsample1d(widen(x), widen(filter), stride, pad_left, pad_right).to(x.dtype());
  Rows r = prepare(x, filter, "lowpass_downsample1d");
  LTX2_CHECK(stride >= 1 && pad_left >= 0 && pad_right >= 0,
             "lowpass_downsample1d: bad arguments (stride {}, pads {}/{})", stride, pad_left, pad_right);
  const int64_t Lp = r.length + pad_left + pad_right, K = r.taps;
  LTX2_CHECK(Lp >= K, "lowpass_downsample1d: input {} is shorter than the filter", x.str());
  const int64_t Lout = (Lp - K) / stride + 1;
  Tensor y = Tensor::empty({x.size(0), x.size(1), Lout});
  const float* xp = r.x.data<float>();
  const float* h = r.filter.data<float>();
  float* yp = y.data<float>();

#pragma omp parallel if (r.rows * Lout * K > kParallelWork)
  {
    std::vector<float> padded(Lp);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < r.rows; ++row) {
      replicate_pad(xp + row * r.length, r.length, pad_left, pad_right, padded.data());
      float* out = yp + row * Lout;
      for (int64_t t = 0; t < Lout; ++t) {
        const float* src = padded.data() + t * stride;
        float s = 0.f;
        for (int64_t k = 0; k < K; ++k) s += src[k] * h[k];
        out[t] = s;
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
