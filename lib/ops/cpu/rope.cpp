// CPU RoPE: frequency grid, cos/sin tables (the reference of the CUDA tables, which are formed on the
// device from device positions with the grid formed here), and the rotation of q/k.
#include "ops/rope.h"
#include "ops/cpu/bf16_widening.h"

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

namespace {

// torch.linspace(0, 1, n) in float32 on the CPU: start + step*i for the first half, end - step*(n-1-i)
// for the second, the latter contracted to one fused multiply-add as torch's compiled kernel does
// (checked against the fixtures' float32 grids; a separately rounded product differs by an ulp).
std::vector<float> torch_linspace_unit(int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  if (n == 1) {
    out[0] = 0.0f;
    return out;
  }
  const float step = 1.0f / static_cast<float>(n - 1);
  const int64_t halfway = n / 2;
  for (int64_t i = 0; i < n; ++i)
    out[i] =
        i < halfway ? step * static_cast<float>(i) : std::fma(-step, static_cast<float>(n - 1 - i), 1.0f);
  return out;
}

}  // namespace

Tensor rope_frequency_grid(double theta, int64_t n_axes, int64_t dim, RopeGridPrecision precision) {
  LTX2_CHECK(n_axes > 0 && dim > 0, "rope: bad grid request (axes {}, dim {})", n_axes, dim);
  const int64_t F = dim / (2 * n_axes);
  LTX2_CHECK(F > 0, "rope: dim {} too small for {} position axes", dim, n_axes);
  Tensor grid = Tensor::empty({F});
  float* g = grid.data<float>();
  if (precision == RopeGridPrecision::Float64) {
    // numpy: linspace(0, 1, F) (i * step, last entry exactly 1), theta ** that, * pi / 2.
    const double step = F > 1 ? 1.0 / static_cast<double>(F - 1) : 0.0;
    for (int64_t i = 0; i < F; ++i) {
      double e = (F > 1 && i == F - 1) ? 1.0 : static_cast<double>(i) * step;
      g[i] = static_cast<float>(std::pow(theta, e) * std::numbers::pi / 2);
    }
  } else {
    const std::vector<float> e = torch_linspace_unit(F);
    const float base = static_cast<float>(theta), pi = static_cast<float>(std::numbers::pi);
    for (int64_t i = 0; i < F; ++i) {
      float v = std::pow(base, e[i]) * pi;
      g[i] = v / 2.0f;
    }
  }
  return grid;
}

namespace {
// The table shapes the spec asks for (both backends).
void check_table_spec(const RopeSpec& spec, int64_t n, int64_t F) {
  if (spec.layout == RopeLayout::Split) {
    const int64_t half = spec.dim / 2, H = spec.heads;
    LTX2_CHECK(spec.dim % 2 == 0 && half - F * n >= 0 && H > 0 && half % H == 0,
               "rope: split tables need an even dim divisible into {} heads (dim {})", H, spec.dim);
  }
}
}  // namespace

RopeTables rope_tables(const Tensor& positions_in, const RopeSpec& spec) {
  LTX2_CHECK(positions_in.dim() == 4 ? positions_in.size(3) == 2 : positions_in.dim() == 3,
             "rope: positions must be [B, axes, T, 2] or [B, axes, T], got {}", positions_in.str());
  const int64_t n = positions_in.size(1);
  LTX2_CHECK(static_cast<int64_t>(spec.max_pos.size()) == n, "rope: {} position axes but {} max_pos values",
             n, spec.max_pos.size());
  const Tensor grid_t = rope_frequency_grid(spec.theta, n, spec.dim, spec.grid);
  check_table_spec(spec, n, grid_t.size(0));
  LTX2_DISPATCH_CUDA(positions_in.device(), rope_tables, positions_in, grid_t, spec);
  const Tensor pos = positions_in.to(DType::F32).contiguous();
  const bool intervals = pos.dim() == 4;
  const int64_t B = pos.size(0), T = pos.size(2);
  const float* grid = grid_t.data<float>();
  const int64_t F = grid_t.size(0), nf = F * n;
  const float* p = pos.data<float>();

  // angles [B, T, F * n], frequency-major.
  std::vector<float> angles(static_cast<size_t>(B * T * nf));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t a = 0; a < n; ++a) {
      const float max_pos = static_cast<float>(spec.max_pos[a]);
      for (int64_t t = 0; t < T; ++t) {
        float x;
        if (intervals) {
          const float* se = p + ((b * n + a) * T + t) * 2;
          x = (se[0] + se[1]) / 2.0f;
        } else {
          x = p[(b * n + a) * T + t];
        }
        const float u = (x / max_pos) * 2.0f - 1.0f;
        float* row = angles.data() + (b * T + t) * nf;
        for (int64_t f = 0; f < F; ++f) row[f * n + a] = grid[f] * u;
      }
    }

  RopeTables out;
  out.layout = spec.layout;
  if (spec.layout == RopeLayout::Split) {
    const int64_t half = spec.dim / 2, pad = half - nf, H = spec.heads;
    const int64_t hd2 = half / H;
    out.cos = Tensor::empty({B, H, T, hd2});
    out.sin = Tensor::empty({B, H, T, hd2});
    float* c = out.cos.data<float>();
    float* s = out.sin.data<float>();
    // Parallel over tokens: full-size tables are ~50M entries (each entry computed independently).
#pragma omp parallel for collapse(2) schedule(static) if (B * T * half > 65536)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const float* row = angles.data() + (b * T + t) * nf;
        for (int64_t j = 0; j < half; ++j) {
          const int64_t h = j / hd2, i = j % hd2, o = ((b * H + h) * T + t) * hd2 + i;
          c[o] = j < pad ? 1.0f : std::cos(row[j - pad]);
          s[o] = j < pad ? 0.0f : std::sin(row[j - pad]);
        }
      }
  } else {
    const int64_t pad = spec.dim % (2 * n);
    out.cos = Tensor::empty({B, T, spec.dim});
    out.sin = Tensor::empty({B, T, spec.dim});
    float* c = out.cos.data<float>();
    float* s = out.sin.data<float>();
#pragma omp parallel for schedule(static) if (B * T * spec.dim > 65536)
    for (int64_t bt = 0; bt < B * T; ++bt) {
      const float* row = angles.data() + bt * nf;
      for (int64_t j = 0; j < spec.dim; ++j) {
        const int64_t o = bt * spec.dim + j;
        c[o] = j < pad ? 1.0f : std::cos(row[(j - pad) / 2]);
        s[o] = j < pad ? 0.0f : std::sin(row[(j - pad) / 2]);
      }
    }
  }
  return out;
}

Tensor apply_rope(const Tensor& x_in, const RopeTables& tables) {
  LTX2_DISPATCH_CUDA(x_in.device(), apply_rope, x_in, tables.cos, tables.sin,
                     static_cast<int>(tables.layout));
  if (cpu::any_bf16({&x_in, &tables.cos, &tables.sin}))
    return apply_rope(cpu::widen(x_in), {cpu::widen(tables.cos), cpu::widen(tables.sin), tables.layout})
        .to(x_in.dtype());
  LTX2_CHECK(x_in.dim() == 3 && x_in.dtype() == DType::F32, "apply_rope: x must be f32 [B, T, dim], got {}",
             x_in.str());
  const Tensor x = x_in.contiguous();
  const Tensor cos = tables.cos.contiguous(), sin = tables.sin.contiguous();
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
  const int64_t Bt = cos.size(0);
  LTX2_CHECK(cos.shape() == sin.shape() && (Bt == 1 || Bt == B), "apply_rope: tables {} / {} do not fit x {}",
             cos.str(), sin.str(), x.str());
  Tensor out = Tensor::empty(x.shape());
  const float* xp = x.data<float>();
  const float* cp = cos.data<float>();
  const float* sp = sin.data<float>();
  float* op = out.data<float>();
  if (tables.layout == RopeLayout::Split) {
    LTX2_CHECK(cos.dim() == 4 && cos.size(2) == T && cos.size(1) * cos.size(3) * 2 == D,
               "apply_rope: split tables {} do not fit x {}", cos.str(), x.str());
    const int64_t H = cos.size(1), hd2 = cos.size(3), hd = 2 * hd2;
#pragma omp parallel for collapse(2) schedule(static) if (B * T * D > 65536)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h) {
          const float* xr = xp + (b * T + t) * D + h * hd;
          float* orow = op + (b * T + t) * D + h * hd;
          const int64_t tb = ((Bt == 1 ? 0 : b) * H + h) * T + t;
          const float* cr = cp + tb * hd2;
          const float* sr = sp + tb * hd2;
          for (int64_t i = 0; i < hd2; ++i) {
            const float x1 = xr[i], x2 = xr[i + hd2];
            orow[i] = x1 * cr[i] + (-sr[i]) * x2;
            orow[i + hd2] = x2 * cr[i] + sr[i] * x1;
          }
        }
  } else {
    LTX2_CHECK(cos.dim() == 3 && cos.size(1) == T && cos.size(2) == D && D % 2 == 0,
               "apply_rope: interleaved tables {} do not fit x {}", cos.str(), x.str());
#pragma omp parallel for collapse(2) schedule(static) if (B * T * D > 65536)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const float* xr = xp + (b * T + t) * D;
        float* orow = op + (b * T + t) * D;
        const int64_t tb = ((Bt == 1 ? 0 : b) * T + t) * D;
        for (int64_t i = 0; i < D; i += 2) {
          orow[i] = xr[i] * cp[tb + i] + (-xr[i + 1]) * sp[tb + i];
          orow[i + 1] = xr[i + 1] * cp[tb + i + 1] + xr[i] * sp[tb + i + 1];
        }
      }
  }
  return out;
}

}  // namespace ltx2::ops
