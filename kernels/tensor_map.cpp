#include "kernels/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "core/cuda/check.h"
#include "core/error.h"

namespace ltx2::cuda {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    LTX2_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    LTX2_CHECK(found == cudaDriverEntryPointSuccess && fn != nullptr,
               "the CUDA driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

}  // namespace

CUtensorMap tensor_map_4d(const char* what, const Tensor& t, CUtensorMapDataType type,
                          const uint64_t (&dims)[4], const uint64_t (&strides)[3], const uint32_t (&box)[4]) {
  CUtensorMap map;
  const cuuint64_t d[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t s[3] = {strides[0], strides[1], strides[2]};
  const cuuint32_t b[4] = {box[0], box[1], box[2], box[3]}, element_strides[4] = {1, 1, 1, 1};
  const CUresult r = tensor_map_encoder()(
      &map, type, 4, t.data_ptr(), d, s, b, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  LTX2_CHECK(r == CUDA_SUCCESS, "{}: cuTensorMapEncodeTiled refused {} (error {})", what, t.str(), int(r));
  return map;
}

}  // namespace ltx2::cuda
