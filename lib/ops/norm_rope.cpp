// The fused qk-norm and RoPE (ops/norm_rope.h): the CUDA kernel, or on the CPU the composition of
// the float32 ops, the reference of that kernel.
#include "ops/norm_rope.h"

#include "core/error.h"
#include "ops/cuda_ops.h"
#include "ops/norm.h"

namespace ltx2::ops {

Tensor rms_norm_rope(const Tensor& x, const Tensor& w, float eps, const RopeTables& tables) {
  LTX2_CHECK(x.dim() == 3, "rms_norm_rope: x must be [B, T, dim], got {}", x.str());
  LTX2_CHECK(!w.defined() || w.numel() == x.size(2), "rms_norm_rope: weight {} for x {}", w.str(), x.str());
  LTX2_DISPATCH_CUDA(x.device(), rms_norm_rope, x, w, eps, tables.cos, tables.sin,
                     static_cast<int>(tables.layout));
  return apply_rope(rms_norm(x, w, eps), tables);
}

}  // namespace ltx2::ops
