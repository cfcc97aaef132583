// Rotary position embeddings (RoPE) as the LTX-2 reference forms them, for the diffusion
// transformer (3-D video, 1-D audio, 1-D A<->V cross) and the text connector (1-D).
//
// Tables, from positions and a RopeSpec:
//   grid[F], F = dim / (2 * n_axes): (pi/2) * theta^(j/(F-1)), formed in float32 (torch) or float64
//     (numpy) and rounded to float32;
//   angle[b, t, f * n_axes + a] = grid[f] * ((p[b, a, t] / max_pos[a]) * 2 - 1), every step in
//     float32 in that order, p = the midpoint (start + end) / 2 of an interval position;
//   Split layout:       cos/sin [B, H, T, dim/(2H)]: [pad ones/zeros | cos/sin(angle)] of length
//                       dim/2, cut into consecutive chunks per head (pad = dim/2 - F*n_axes);
//   Interleaved layout: cos/sin [B, T, dim]: [pad | each cos/sin(angle) twice] (pad = dim % (2n)).
// Application to x [B, T, dim] (dim = H * head_dim, heads as contiguous chunks):
//   Split: per head, x1 = first half, x2 = second half: (x1 cos - x2 sin, x2 cos + x1 sin);
//   Interleaved: pairs (2i, 2i+1): (x0 cos - x1 sin, x1 cos + x0 sin).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ltx2::ops {

enum class RopeLayout { Split, Interleaved };
enum class RopeGridPrecision { Float32, Float64 };

struct RopeSpec {
  int64_t dim = 0;    // width of the rotated vectors (heads * head_dim)
  int64_t heads = 1;  // split layout: how the frequency list is cut across heads
  double theta = 10000.0;
  std::vector<double> max_pos;  // one normaliser per position axis
  RopeLayout layout = RopeLayout::Split;
  RopeGridPrecision grid = RopeGridPrecision::Float32;
};

struct RopeTables {
  Tensor cos, sin;  // Split: [B, H, T, dim/(2H)]; Interleaved: [B, T, dim]
  RopeLayout layout = RopeLayout::Split;
};

// The frequency grid [dim / (2 * n_axes)], float32.
Tensor rope_frequency_grid(double theta, int64_t n_axes, int64_t dim, RopeGridPrecision precision);

// positions: [B, n_axes, T, 2] intervals [start, end) (RoPE uses their midpoints) or [B, n_axes, T]
// points (f32 or bf16). The tables are float32 on the positions' device (CUDA: formed there, without
// copying the positions to the host).
RopeTables rope_tables(const Tensor& positions, const RopeSpec& spec);

// Rotates x [B, T, dim] by the tables (batch 1 tables broadcast over B).
Tensor apply_rope(const Tensor& x, const RopeTables& tables);

}  // namespace ltx2::ops
