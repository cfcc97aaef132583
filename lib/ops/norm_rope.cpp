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

NormedQk rms_norm_rope_qk(const Tensor& q, const Tensor& wq, const Tensor& k, const Tensor& wk, float eps,
                          const RopeTables& tables) {
  LTX2_CHECK(q.shape() == k.shape() && q.dtype() == k.dtype() && q.device() == k.device(),
             "rms_norm_rope_qk: q {} and k {} differ", q.str(), k.str());
  LTX2_CHECK(wq.defined() == wk.defined() && (!wq.defined() || wq.dtype() == wk.dtype()),
             "rms_norm_rope_qk: the weights {} and {} differ in kind", wq.str(), wk.str());
  LTX2_DISPATCH_CUDA(q.device(), rms_norm_rope_qk, q, wq, k, wk, eps, tables.cos, tables.sin,
                     static_cast<int>(tables.layout));
  return {rms_norm_rope(q, wq, eps, tables), rms_norm_rope(k, wk, eps, tables)};
}

}  // namespace ltx2::ops
