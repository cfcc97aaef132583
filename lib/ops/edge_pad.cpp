// edge_pad (ops/edge_pad.h): dispatch to the CUDA table or the CPU kernel, and the modes' names.
#include "ops/edge_pad.h"

#include "ops/cpu/cpu_ops.h"
#include "ops/cuda_ops.h"

namespace ltx2::ops {

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Zeros: return "zeros";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

Tensor edge_pad(const Tensor& x, int dim, int64_t before, int64_t after, PadMode mode) {
  LTX2_DISPATCH_CUDA(x.device(), edge_pad, x, dim, before, after, static_cast<int>(mode));
  return cpu::edge_pad(x, dim, before, after, mode);
}

}  // namespace ltx2::ops
