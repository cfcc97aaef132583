// Fills the CUDA op table (ops/cuda_ops.h). Each kernel file exposes its entry points in the
// ltx2::cuda namespace; this file is the one place that lists them.
#include "ops/cuda_ops.h"

namespace ltx2::ops {

void fill_cuda_ops(CudaOps& table) {
  (void)table;  // GPU kernels register here as they land (see issue: the CUDA backend).
}

}  // namespace ltx2::ops
