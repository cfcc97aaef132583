// The CUDA op table (ops/cuda_ops.h), filled once by the kernels on first use.
#include "ops/cuda_ops.h"

namespace ltx2::ops {

#ifdef LTX2_WITH_CUDA
const CudaOps& cuda_ops() {
  static const CudaOps table = [] {
    CudaOps t;
    fill_cuda_ops(t);
    return t;
  }();
  return table;
}
#else
const CudaOps& cuda_ops() { LTX2_FAIL("this ltx2 was built without the CUDA backend"); }
#endif

}  // namespace ltx2::ops
