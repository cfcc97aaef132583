// Fills the CUDA op table (ops/cuda_ops.h) that lib/ops declares: each op of the op list
// (ops/op_list.h) has its entry point ltx2::cuda::name in one kernel file, declared and registered
// here from the list, so a listed op without a kernel fails to link.
#include "ops/cuda_ops.h"

namespace ltx2::cuda {
#define LTX2_CUDA_OP_DECLARE(name, ret, params) ret name params;
LTX2_CUDA_OPS(LTX2_CUDA_OP_DECLARE)
#undef LTX2_CUDA_OP_DECLARE
}  // namespace ltx2::cuda

namespace ltx2::ops {

void fill_cuda_ops(CudaOps& table) {
#define LTX2_CUDA_OP_FILL(name, ret, params) table.name = &cuda::name;
  LTX2_CUDA_OPS(LTX2_CUDA_OP_FILL)
#undef LTX2_CUDA_OP_FILL
}

}  // namespace ltx2::ops
