// Neighborhood attention over query tiles (one ops::attention call per tile, keys = the union of
// its queries' windows, an additive mask cutting each query to its own window), and axial RoPE.
#include "models/video_vae/neighborhood_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace ltx2::video_vae {

namespace {

// Score elements (queries x keys) one tile may hold: bounds the mask and the CPU's score rows.
constexpr int64_t kTileScoreBudget = int64_t{1} << 22;

int64_t window_start(int64_t i, int64_t length, int64_t k) {
  return std::min(std::max(i - k / 2, int64_t{0}), length - k);
}

// Per-axis query tile lengths: halve the axis with the most tile per kernel until one tile's
// queries x keys fit the budget (the reference's _pick_tiles rule).
Dims3 pick_tiles(const Dims3& dims, const Dims3& kernel) {
  Dims3 tiles = dims;
  auto cost = [&](const Dims3& t) {
    int64_t nq = 1, nk = 1;
    for (int a = 0; a < 3; ++a) nq *= t[a], nk *= std::min(dims[a], t[a] + kernel[a] - 1);
    return nq * nk;
  };
  while (cost(tiles) > kTileScoreBudget && *std::max_element(tiles.begin(), tiles.end()) > 1) {
    int best = 0;
    for (int a = 1; a < 3; ++a)
      if (static_cast<double>(tiles[a]) / kernel[a] > static_cast<double>(tiles[best]) / kernel[best])
        best = a;
    if (tiles[best] <= 1) break;
    tiles[best] = std::max<int64_t>(1, (tiles[best] + 1) / 2);
  }
  return tiles;
}

// [B, t, h, w, heads, D] -> [B, heads, t*h*w, D], contiguous.
Tensor to_heads(const Tensor& x) {
  const int64_t B = x.size(0), n = x.size(1) * x.size(2) * x.size(3), heads = x.size(4), D = x.size(5);
  return x.permute({0, 4, 1, 2, 3, 5}).contiguous().view({B, heads, n, D});
}

Tensor rotate_axis(const Tensor& xc, const std::vector<float>& pos, int axis, Device device) {
  const int64_t d = xc.size(-1), half = d / 2;
  std::vector<float> c(pos.size() * half), s(pos.size() * half);
  for (size_t p = 0; p < pos.size(); ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double exponent = static_cast<double>(2 * j) / static_cast<double>(d);
      const float inv = static_cast<float>(1.0 / std::pow(10000.0, exponent));
      const float angle = pos[p] * inv;
      c[p * half + j] = std::cos(angle);
      s[p * half + j] = std::sin(angle);
    }
  Shape table = {1, 1, 1, 1, 1, half};
  table[axis] = static_cast<int64_t>(pos.size());
  // float32 whatever x's dtype, as the reference's rope_compute_dtype.
  const Tensor ct = Tensor::from_vector(c, table).to(device);
  const Tensor st = Tensor::from_vector(s, table).to(device);
  Shape pairs = xc.shape();
  pairs.back() = half;
  pairs.push_back(2);
  const Tensor x2 = xc.to(DType::F32).contiguous().view(pairs);
  const Tensor xe = x2.select(6, 0), xo = x2.select(6, 1);
  const Tensor re = ops::sub(ops::mul(xe, ct), ops::mul(xo, st));
  const Tensor ro = ops::add(ops::mul(xe, st), ops::mul(xo, ct));
  return ops::cat({re.unsqueeze(6), ro.unsqueeze(6)}, 6).view(xc.shape()).to(xc.dtype());
}

}  // namespace

Tensor neighborhood_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Dims3& kernel) {
  LTX2_CHECK(q.dim() == 6 && k.shape() == q.shape() && v.shape() == q.shape(),
             "neighborhood attention: q {}, k {}, v {} must be equal [B, T, H, W, heads, D]", q.str(),
             k.str(), v.str());
  const Dims3 dims = {q.size(1), q.size(2), q.size(3)};
  Dims3 kern{};
  for (int a = 0; a < 3; ++a) {
    LTX2_CHECK(kernel[a] >= 1, "neighborhood attention: kernel {} must be positive", kernel[a]);
    kern[a] = std::min(kernel[a], dims[a]);
  }
  const Dims3 tiles = pick_tiles(dims, kern);
  Tensor out = Tensor::empty(q.shape(), v.dtype(), v.device());
  // Masks by tile geometry (the windows relative to the tile's key region).
  std::map<std::vector<int64_t>, Tensor> masks;
  for (int64_t t0 = 0; t0 < dims[0]; t0 += tiles[0])
    for (int64_t h0 = 0; h0 < dims[1]; h0 += tiles[1])
      for (int64_t w0 = 0; w0 < dims[2]; w0 += tiles[2]) {
        const Dims3 lo = {t0, h0, w0};
        Dims3 hi{}, rlo{}, rhi{};
        std::vector<int64_t> geometry;
        for (int a = 0; a < 3; ++a) {
          hi[a] = std::min(lo[a] + tiles[a], dims[a]);
          rlo[a] = window_start(lo[a], dims[a], kern[a]);
          rhi[a] = window_start(hi[a] - 1, dims[a], kern[a]) + kern[a];
          geometry.push_back(hi[a] - lo[a]);
          geometry.push_back(rhi[a] - rlo[a]);
          for (int64_t i = lo[a]; i < hi[a]; ++i)
            geometry.push_back(window_start(i, dims[a], kern[a]) - rlo[a]);
        }
        auto region = [&](const Tensor& x, const Dims3& a0, const Dims3& a1) {
          return x.slice(1, a0[0], a1[0]).slice(2, a0[1], a1[1]).slice(3, a0[2], a1[2]);
        };
        const Dims3 nq = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
        const Dims3 nk = {rhi[0] - rlo[0], rhi[1] - rlo[1], rhi[2] - rlo[2]};
        Tensor& mask = masks[geometry];
        if (!mask.defined()) {
          const int64_t NQ = nq[0] * nq[1] * nq[2], NK = nk[0] * nk[1] * nk[2];
          std::vector<float> m(static_cast<size_t>(NQ * NK), -std::numeric_limits<float>::infinity());
          int64_t row = 0;
          for (int64_t i = 0; i < nq[0]; ++i)
            for (int64_t j = 0; j < nq[1]; ++j)
              for (int64_t l = 0; l < nq[2]; ++l, ++row) {
                const Dims3 s = {window_start(lo[0] + i, dims[0], kern[0]) - rlo[0],
                                 window_start(lo[1] + j, dims[1], kern[1]) - rlo[1],
                                 window_start(lo[2] + l, dims[2], kern[2]) - rlo[2]};
                for (int64_t x = s[0]; x < s[0] + kern[0]; ++x)
                  for (int64_t y = s[1]; y < s[1] + kern[1]; ++y)
                    for (int64_t z = s[2]; z < s[2] + kern[2]; ++z)
                      m[row * NK + (x * nk[1] + y) * nk[2] + z] = 0.f;
              }
          mask = Tensor::from_vector(m, {1, 1, NQ, NK}).to(q.device());
        }
        const Tensor o = ops::attention(to_heads(region(q, lo, hi)), to_heads(region(k, rlo, rhi)),
                                        to_heads(region(v, rlo, rhi)), mask, 1.f);
        const int64_t B = q.size(0), heads = q.size(4), D = v.size(5);
        // The GPU's attention engines may hand back [B, heads, T, D] as a view of [B, T, heads, D].
        region(out, lo, hi)
            .copy_(o.contiguous().view({B, heads, nq[0], nq[1], nq[2], D}).permute({0, 2, 3, 4, 1, 5}));
      }
  return out;
}

AxisPositions axis_positions(int64_t t, int64_t h, int64_t w) {
  AxisPositions p;
  for (int64_t i = 0; i < t; ++i) p.t.push_back(static_cast<float>(i));
  for (int64_t i = 0; i < h; ++i) p.h.push_back(static_cast<float>(i));
  for (int64_t i = 0; i < w; ++i) p.w.push_back(static_cast<float>(i));
  return p;
}

Tensor axial_rope(const Tensor& x, const Dims3& split, const AxisPositions& pos) {
  LTX2_CHECK(x.dim() == 6 && x.size(5) == split[0] + split[1] + split[2] &&
                 x.size(1) == static_cast<int64_t>(pos.t.size()) &&
                 x.size(2) == static_cast<int64_t>(pos.h.size()) &&
                 x.size(3) == static_cast<int64_t>(pos.w.size()),
             "axial RoPE: x {} for split ({}, {}, {}) and {} x {} x {} positions", x.str(), split[0],
             split[1], split[2], pos.t.size(), pos.h.size(), pos.w.size());
  const int64_t a = split[0], b = split[0] + split[1], D = x.size(5);
  return ops::cat({rotate_axis(x.slice(5, 0, a), pos.t, 1, x.device()),
                   rotate_axis(x.slice(5, a, b), pos.h, 2, x.device()),
                   rotate_axis(x.slice(5, b, D), pos.w, 3, x.device())},
                  5);
}

}  // namespace ltx2::video_vae
