// Split-layout RoPE (written with the elementwise ops, so it runs wherever they run) and the LTX
// 1-D frequency tables (host math that reproduces the reference's float32 rounding steps: the
// angles reach ~1.5e4 rad, where one float32 ulp already moves sin/cos by ~1e-3).
#include "ops/rope_1d.h"

#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/shape.h"

namespace ltx2::ops {

Tensor apply_rope_split(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  LTX2_CHECK(x.dim() == 4 && x.size(-1) % 2 == 0, "apply_rope_split: x must be [B, H, T, even hd], got {}",
             x.str());
  int64_t half = x.size(-1) / 2;
  LTX2_CHECK(cos.size(-1) == half && sin.size(-1) == half,
             "apply_rope_split: tables {} / {} do not match head dim {}", cos.str(), sin.str(), x.size(-1));
  Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  Tensor out1 = sub(mul(x1, cos), mul(x2, sin));
  Tensor out2 = add(mul(x2, cos), mul(x1, sin));
  return cat({out1, out2}, -1);
}

namespace {

// torch.linspace(0, 1, n, float32): the first half counts up from 0, the second half down from 1.
std::vector<float> linspace01_f32(int64_t n) {
  std::vector<float> v(n);
  if (n == 1) {
    v[0] = 0.f;
    return v;
  }
  float step = 1.f / static_cast<float>(n - 1);
  int64_t halfway = n / 2;
  for (int64_t i = 0; i < n; ++i)
    v[i] = i < halfway ? static_cast<float>(i) * step : 1.f - static_cast<float>(n - i - 1) * step;
  return v;
}

}  // namespace

RopeTables ltx_rope_1d_tables(int64_t tokens, int64_t inner_dim, int64_t heads, double theta, double max_pos,
                              bool double_precision_grid) {
  int64_t n = inner_dim / 2;
  LTX2_CHECK(n > 0 && heads > 0 && n % heads == 0,
             "ltx_rope_1d_tables: inner dim {} does not split over {} heads", inner_dim, heads);
  std::vector<float> grid(n);
  if (double_precision_grid) {
    // numpy: linspace(0, 1, n) in float64, power, * pi / 2, then one rounding to float32.
    double step = n > 1 ? 1.0 / static_cast<double>(n - 1) : 0.0;
    for (int64_t k = 0; k < n; ++k) {
      double e = k == n - 1 && n > 1 ? 1.0 : static_cast<double>(k) * step;
      grid[k] = static_cast<float>(std::pow(theta, e) * M_PI / 2);
    }
  } else {
    std::vector<float> e = linspace01_f32(n);
    const float pi_f = static_cast<float>(M_PI);
    for (int64_t k = 0; k < n; ++k) {
      float p = static_cast<float>(
          std::pow(static_cast<double>(static_cast<float>(theta)), static_cast<double>(e[k])));
      grid[k] = p * pi_f / 2.f;
    }
  }
  int64_t hd2 = n / heads;
  Tensor c = Tensor::empty({1, heads, tokens, hd2}), s = Tensor::empty({1, heads, tokens, hd2});
  float* cp = c.data<float>();
  float* sp = s.data<float>();
  const float max_pos_f = static_cast<float>(max_pos);
  for (int64_t t = 0; t < tokens; ++t) {
    float frac = static_cast<float>(t) / max_pos_f;
    float scale = frac * 2.f - 1.f;
    for (int64_t k = 0; k < n; ++k) {
      float angle = grid[k] * scale;
      int64_t h = k / hd2, j = k % hd2;
      int64_t at = (h * tokens + t) * hd2 + j;
      cp[at] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sp[at] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return {c, s};
}

}  // namespace ltx2::ops
