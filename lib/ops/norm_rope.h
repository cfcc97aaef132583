// The fused qk-norm and RoPE of the attention modules (reference: transformer.md, "q = q_norm(to_q(x))"
// then RoPE): rms_norm over the full last dim (H * head_dim, not per head) with its learned weight,
// then the rotation by a token's RoPE tables, in one pass over the row. The result equals
// apply_rope(rms_norm(x, w, eps), tables) on every backend: the CPU op is that composition, and the
// CUDA kernel rounds the normed value to x's dtype before rotating it as the unfused pair does.
#pragma once

#include "core/tensor.h"
#include "ops/rope.h"

namespace ltx2::ops {

// x [B, T, dim]; w [dim] or undefined (no affine); tables as apply_rope takes them.
Tensor rms_norm_rope(const Tensor& x, const Tensor& w, float eps, const RopeTables& tables);

struct NormedQk {
  Tensor q, k;
};
// A self-attention's q and k, each with its own norm weight, rotated by the same tables: equal to
// two rms_norm_rope calls (bit for bit on every backend); the CUDA kernel reads the tables once for
// both. q and k have one shape and dtype; wq and wk are both given (one dtype) or both undefined.
NormedQk rms_norm_rope_qk(const Tensor& q, const Tensor& wq, const Tensor& k, const Tensor& wk, float eps,
                          const RopeTables& tables);

}  // namespace ltx2::ops
