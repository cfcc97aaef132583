// CPU 3-D convolution: im2col per block of output positions, then a register-blocked kernel.
//
// Work item = (batch, output frame, block of kRows output positions of that frame). It gathers
// the block's columns into panels of kLanes positions, panel[k][lane] (k = (ci, kd, kh, kw) in
// weight order; zero where the window reads padding; lanes past the block's end are zero), then
// computes kCoBlock output channels x kLanes positions at a time in registers over the whole K.
// The inner loop runs along lanes, so it vectorises without reassociating a reduction (no
// -ffast-math needed).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

namespace {

constexpr int64_t kRows = 64;    // output positions per work item
constexpr int64_t kLanes = 16;   // positions per register panel
constexpr int64_t kCoBlock = 4;  // output channels per register block
constexpr int64_t kPanels = kRows / kLanes;

struct Geometry {
  int64_t B, Cin, D, H, W;
  int64_t Cout, kD, kH, kW;
  int64_t Do, Ho, Wo;
  std::array<int64_t, 3> stride, pad;
  int64_t K() const { return Cin * kD * kH * kW; }
};

// Panels of positions [p0, p0 + rows) of output frame od: col[(panel * K + k) * kLanes + lane].
void gather_columns(const Geometry& g, const float* xb, int64_t od, int64_t p0, int64_t rows, float* col) {
  const int64_t K = g.K(), panels = (rows + kLanes - 1) / kLanes;
  std::fill(col, col + panels * K * kLanes, 0.f);
  const int64_t plane = g.H * g.W, frame = g.D * plane;
  int64_t k = 0;
  for (int64_t ci = 0; ci < g.Cin; ++ci) {
    for (int64_t kd = 0; kd < g.kD; ++kd) {
      const int64_t id = od * g.stride[0] - g.pad[0] + kd;
      const bool d_ok = id >= 0 && id < g.D;
      for (int64_t kh = 0; kh < g.kH; ++kh) {
        for (int64_t kw = 0; kw < g.kW; ++kw, ++k) {
          if (!d_ok) continue;
          const float* src = xb + ci * frame + id * plane;
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t p = p0 + r, oh = p / g.Wo, ow = p % g.Wo;
            const int64_t ih = oh * g.stride[1] - g.pad[1] + kh;
            const int64_t iw = ow * g.stride[2] - g.pad[2] + kw;
            if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
              col[((r / kLanes) * K + k) * kLanes + r % kLanes] = src[ih * g.W + iw];
          }
        }
      }
    }
  }
}

// out[co][lane] = sum_k w[co * K + k] * panel[k * kLanes + lane] for kCoBlock channels from co.
// Cloned for AVX2 (picked at load time where the CPU has it): the build targets baseline x86-64.
__attribute__((target_clones("avx2", "default"))) void panel_block(const float* w, const float* panel,
                                                                   int64_t K, int64_t co,
                                                                   float (&out)[kCoBlock][kLanes]) {
  float acc[kCoBlock][kLanes] = {};
  const float* w0 = w + co * K;
  for (int64_t k = 0; k < K; ++k) {
    const float* c = panel + k * kLanes;
    for (int64_t i = 0; i < kCoBlock; ++i) {
      const float wi = w0[i * K + k];
#pragma omp simd
      for (int64_t j = 0; j < kLanes; ++j) acc[i][j] += wi * c[j];
    }
  }
  for (int64_t i = 0; i < kCoBlock; ++i) std::memcpy(out[i], acc[i], sizeof(acc[i]));
}

// acc[co * kRows + r] = sum_k w[co * K + k] * column k of position r.
void accumulate(const float* w, const float* col, float* acc, int64_t Cout, int64_t K, int64_t rows) {
  const int64_t panels = (rows + kLanes - 1) / kLanes;
  for (int64_t p = 0; p < panels; ++p) {
    const float* panel = col + p * K * kLanes;
    int64_t co = 0;
    float block[kCoBlock][kLanes];
    for (; co + kCoBlock <= Cout; co += kCoBlock) {
      panel_block(w, panel, K, co, block);
      for (int64_t i = 0; i < kCoBlock; ++i)
        for (int64_t j = 0; j < kLanes; ++j) acc[(co + i) * kRows + p * kLanes + j] = block[i][j];
    }
    for (; co < Cout; ++co) {
      float lane[kLanes] = {};
      for (int64_t k = 0; k < K; ++k) {
        const float wk = w[co * K + k];
#pragma omp simd
        for (int64_t j = 0; j < kLanes; ++j) lane[j] += wk * panel[k * kLanes + j];
      }
      for (int64_t j = 0; j < kLanes; ++j) acc[co * kRows + p * kLanes + j] = lane[j];
    }
  }
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv3dParams& params) {
  if (any_bf16({&x, &w, &bias})) return cpu::conv3d(widen(x), widen(w), widen(bias), params).to(x.dtype());
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
    std::vector<float> col(static_cast<size_t>(K * kPanels * kLanes));
    std::vector<float> acc(static_cast<size_t>(g.Cout * kRows));
#pragma omp for schedule(dynamic)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t b = item / (g.Do * blocks), rest = item % (g.Do * blocks);
      const int64_t od = rest / blocks, p0 = (rest % blocks) * kRows;
      const int64_t rows = std::min(kRows, positions - p0);
      gather_columns(g, xp + b * in_batch, od, p0, rows, col.data());
      accumulate(wp, col.data(), acc.data(), g.Cout, K, rows);
      for (int64_t co = 0; co < g.Cout; ++co) {
        float* dst = yp + b * out_batch + co * out_channel + od * out_frame + p0;
        const float* src = acc.data() + co * kRows;
        const float bias_v = bp ? bp[co] : 0.f;
        for (int64_t r = 0; r < rows; ++r) dst[r] = src[r] + bias_v;
      }
    }
  }
  return y;
}

}  // namespace ltx2::ops::cpu
