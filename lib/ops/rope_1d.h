// Rotary position embedding in the SPLIT layout (first half of each head rotates with the second
// half), and the 1-D LTX frequency tables the text connector uses.
//
// Tables: cos/sin [1, H, T, hd/2] f32, head h holding frequencies h*hd/2 .. (h+1)*hd/2 - 1 of the
// inner_dim/2 grid (the reference splits one grid across the heads).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace ltx2::ops {

// x [B, H, T, hd]; cos, sin broadcastable to [B, H, T, hd/2]:
// out[:hd/2] = x1*cos - x2*sin, out[hd/2:] = x2*cos + x1*sin.
Tensor apply_rope_split(const Tensor& x, const Tensor& cos, const Tensor& sin);

struct RopeTables {
  Tensor cos, sin;
};

// LTX 1-D tables for positions 0..T-1: grid[k] = theta^(k/(n-1)) * pi/2 for k < n = inner_dim/2
// (float64 then rounded when double_precision_grid, else float32 as torch computes it), angle =
// grid[k] * (2 * p / max_pos - 1) in float32.
RopeTables ltx_rope_1d_tables(int64_t tokens, int64_t inner_dim, int64_t heads, double theta, double max_pos,
                              bool double_precision_grid);

}  // namespace ltx2::ops
