// CPU 3-D convolution: im2col per block of output positions, then an outer-product kernel.
//
// Work item = (batch, output frame, block of kRows output positions of that frame). It gathers a
// column buffer col[k][r] (k = (ci, kd, kh, kw) in weight order, r = position in the block; zero
// where the window reads padding) and accumulates acc[co][r] += w[co][k] * col[k][r] over K in
// chunks that stay in cache. The inner loop runs along r, so it vectorises without reassociating a
// reduction (no -ffast-math needed).
#include "ops/conv3d.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

namespace {

constexpr int64_t kRows = 64;    // output positions per work item
constexpr int64_t kChunk = 256;  // K values per cache chunk
constexpr int64_t kCoBlock = 4;  // output channels per register block

struct Geometry {
  int64_t B, Cin, D, H, W;
  int64_t Cout, kD, kH, kW;
  int64_t Do, Ho, Wo;
  std::array<int64_t, 3> stride, pad;
  int64_t K() const { return Cin * kD * kH * kW; }
};

// col[k * rows + r] for positions [p0, p0 + rows) of output frame od.
void gather_columns(const Geometry& g, const float* xb, int64_t od, int64_t p0, int64_t rows, float* col) {
  const int64_t plane = g.H * g.W, frame = g.D * plane;
  int64_t k = 0;
  for (int64_t ci = 0; ci < g.Cin; ++ci) {
    for (int64_t kd = 0; kd < g.kD; ++kd) {
      const int64_t id = od * g.stride[0] - g.pad[0] + kd;
      const bool d_ok = id >= 0 && id < g.D;
      for (int64_t kh = 0; kh < g.kH; ++kh) {
        for (int64_t kw = 0; kw < g.kW; ++kw, ++k) {
          float* dst = col + k * rows;
          if (!d_ok) {
            std::fill(dst, dst + rows, 0.f);
            continue;
          }
          const float* src = xb + ci * frame + id * plane;
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t p = p0 + r, oh = p / g.Wo, ow = p % g.Wo;
            const int64_t ih = oh * g.stride[1] - g.pad[1] + kh;
            const int64_t iw = ow * g.stride[2] - g.pad[2] + kw;
            dst[r] = (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W) ? src[ih * g.W + iw] : 0.f;
          }
        }
      }
    }
  }
}

// acc[co * rows + r] += sum_k w[co * K + k] * col[k * rows + r].
void accumulate(const float* w, const float* col, float* acc, int64_t Cout, int64_t K, int64_t rows) {
  for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
    const int64_t k1 = std::min(K, k0 + kChunk);
    int64_t co = 0;
    for (; co + kCoBlock <= Cout; co += kCoBlock) {
      float* a0 = acc + co * rows;
      float* a1 = a0 + rows;
      float* a2 = a1 + rows;
      float* a3 = a2 + rows;
      const float* w0 = w + co * K;
      for (int64_t k = k0; k < k1; ++k) {
        const float c0 = w0[k], c1 = w0[K + k], c2 = w0[2 * K + k], c3 = w0[3 * K + k];
        const float* cr = col + k * rows;
#pragma omp simd
        for (int64_t r = 0; r < rows; ++r) {
          a0[r] += c0 * cr[r];
          a1[r] += c1 * cr[r];
          a2[r] += c2 * cr[r];
          a3[r] += c3 * cr[r];
        }
      }
    }
    for (; co < Cout; ++co) {
      float* a = acc + co * rows;
      for (int64_t k = k0; k < k1; ++k) {
        const float c = w[co * K + k];
        const float* cr = col + k * rows;
#pragma omp simd
        for (int64_t r = 0; r < rows; ++r) a[r] += c * cr[r];
      }
    }
  }
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& params) {
  LTX2_DISPATCH_CUDA(x.device(), conv3d, x, w, bias, params);
  LTX2_CHECK(x.dtype() == DType::F32 && w.dtype() == DType::F32,
             "conv3d: CPU path takes f32 tensors, got {} and {}", x.str(), w.str());
  LTX2_CHECK(x.dim() == 5 && w.dim() == 5 && x.size(1) == w.size(1),
             "conv3d: input {} does not match weight {}", x.str(), w.str());
  Geometry g{x.size(0), x.size(1), x.size(2), x.size(3), x.size(4), w.size(0),     w.size(2),
             w.size(3), w.size(4), 0,         0,         0,         params.stride, params.padding};
  for (int i = 0; i < 3; ++i)
    LTX2_CHECK(g.stride[i] >= 1 && g.pad[i] >= 0, "conv3d: stride {} / padding {} on axis {}", g.stride[i],
               g.pad[i], i);
  const int64_t in_ext[3] = {g.D, g.H, g.W}, k_ext[3] = {g.kD, g.kH, g.kW};
  int64_t out_ext[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t span = in_ext[i] + 2 * g.pad[i] - k_ext[i];
    LTX2_CHECK(span >= 0, "conv3d: kernel {} larger than padded input {} on axis {}", w.str(), x.str(), i);
    out_ext[i] = span / g.stride[i] + 1;
  }
  g.Do = out_ext[0], g.Ho = out_ext[1], g.Wo = out_ext[2];
  if (bias.defined())
    LTX2_CHECK(bias.numel() == g.Cout, "conv3d: bias {} for {} outputs", bias.str(), g.Cout);

  Tensor xc = x.contiguous(), wc = w.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = Tensor::empty({g.B, g.Cout, g.Do, g.Ho, g.Wo});
  const float* xp = xc.data<float>();
  const float* wp = wc.data<float>();
  const float* bp = bc.defined() ? bc.data<float>() : nullptr;
  float* yp = y.data<float>();

  const int64_t K = g.K(), positions = g.Ho * g.Wo;
  const int64_t blocks = (positions + kRows - 1) / kRows;
  const int64_t items = g.B * g.Do * blocks;
  const int64_t in_batch = g.Cin * g.D * g.H * g.W, out_frame = positions;
  const int64_t out_channel = g.Do * positions, out_batch = g.Cout * out_channel;
  const bool parallel = items > 1 && g.Cout * K * positions > 65536;

#pragma omp parallel if (parallel)
  {
    std::vector<float> col(static_cast<size_t>(K * kRows));
    std::vector<float> acc(static_cast<size_t>(g.Cout * kRows));
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / (g.Do * blocks), rest = item % (g.Do * blocks);
      const int64_t od = rest / blocks, p0 = (rest % blocks) * kRows;
      const int64_t rows = std::min(kRows, positions - p0);
      gather_columns(g, xp + b * in_batch, od, p0, rows, col.data());
      std::fill(acc.begin(), acc.begin() + g.Cout * rows, 0.f);
      accumulate(wp, col.data(), acc.data(), g.Cout, K, rows);
      for (int64_t co = 0; co < g.Cout; ++co) {
        float* dst = yp + b * out_batch + co * out_channel + od * out_frame + p0;
        const float* src = acc.data() + co * rows;
        const float bias_v = bp ? bp[co] : 0.f;
        for (int64_t r = 0; r < rows; ++r) dst[r] = src[r] + bias_v;
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops
