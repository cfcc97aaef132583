// The op table of the CUDA backend (the ggml idea): one function pointer per op of the op list
// (ops/op_list.h). lib/ops declares the table and the public ops dispatch through it; kernels/
// (kernels/register.cu) fills it with the entry points ltx2::cuda::X, every listed op having one,
// so the library needs no CUDA headers and a CPU-only build links no kernel. Every public op that
// has a CUDA kernel dispatches on its first tensor's device through LTX2_DISPATCH_CUDA, then runs
// its CPU implementation (ops/cpu/cpu_ops.h).
#pragma once

#include "core/error.h"
#include "core/op_profile.h"
#include "core/tensor.h"
#include "ops/op_list.h"

namespace ltx2::ops {

struct CudaOps {
#define LTX2_CUDA_OP_MEMBER(name, ret, params) ret(*name) params = nullptr;
  LTX2_CUDA_OPS(LTX2_CUDA_OP_MEMBER)
#undef LTX2_CUDA_OP_MEMBER
};

// The filled table; throws when this build has no CUDA backend.
const CudaOps& cuda_ops();

// Sets every entry of `table` (kernels/register.cu; CUDA builds only).
void fill_cuda_ops(CudaOps& table);

}  // namespace ltx2::ops

// In a public op: if `dev` is a GPU, call the table entry `name` with the remaining arguments
// (timed by a recording OpProfile under the entry's name).
#define LTX2_DISPATCH_CUDA(dev, name, ...)              \
  do {                                                  \
    if ((dev).is_cuda()) {                              \
      ::ltx2::OpScope op_scope_(#name);                 \
      return ::ltx2::ops::cuda_ops().name(__VA_ARGS__); \
    }                                                   \
  } while (0)
