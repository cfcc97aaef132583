// RoPE (ops/rope.h): the frequency grid and the table checks both backends share, and the dispatch
// of the tables and the rotation to the CUDA table or the CPU kernels.
#include "ops/rope.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_ops.h"
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

RopeTables rope_tables(const Tensor& positions, const RopeSpec& spec) {
  LTX2_CHECK(positions.dim() == 4 ? positions.size(3) == 2 : positions.dim() == 3,
             "rope: positions must be [B, axes, T, 2] or [B, axes, T], got {}", positions.str());
  const int64_t n = positions.size(1);
  LTX2_CHECK(static_cast<int64_t>(spec.max_pos.size()) == n, "rope: {} position axes but {} max_pos values",
             n, spec.max_pos.size());
  const Tensor grid = rope_frequency_grid(spec.theta, n, spec.dim, spec.grid);
  check_table_spec(spec, n, grid.size(0));
  LTX2_DISPATCH_CUDA(positions.device(), rope_tables, positions, grid, spec);
  return cpu::rope_tables(positions, grid, spec);
}

Tensor apply_rope(const Tensor& x, const RopeTables& tables) {
  LTX2_DISPATCH_CUDA(x.device(), apply_rope, x, tables.cos, tables.sin, static_cast<int>(tables.layout));
  return cpu::apply_rope(x, tables);
}

}  // namespace ltx2::ops
