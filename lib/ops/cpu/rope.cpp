// CPU RoPE: the cos/sin tables (the reference of the CUDA tables, which are formed on the device
// from device positions with the same host grid) and the rotation of q/k.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"

namespace ltx2::ops::cpu {

RopeTables rope_tables(const Tensor& positions_in, const Tensor& grid_t, const RopeSpec& spec) {
  const int64_t n = positions_in.size(1);
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
  if (any_bf16({&x_in, &tables.cos, &tables.sin}))
    return cpu::apply_rope(widen(x_in), {widen(tables.cos), widen(tables.sin), tables.layout})
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

}  // namespace ltx2::ops::cpu
