// Check macros for the GPU libraries: each throws ltx2::Error with file, line, the failed call and
// the library's own error string. Only included by CUDA translation units.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/error.h"

namespace ltx2 {
const char* cublas_status_string(cublasStatus_t s);
}

#define LTX2_CUDA_CHECK(expr)                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (expr);                                                                  \
    if (e_ != cudaSuccess)                                                                    \
      ::ltx2::throw_error(__FILE__, __LINE__,                                                 \
                          ::fmt::format("CUDA error in {}: {}", #expr, cudaGetErrorString(e_))); \
  } while (0)

#define LTX2_CUBLAS_CHECK(expr)                                                              \
  do {                                                                                       \
    cublasStatus_t s_ = (expr);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS)                                                         \
      ::ltx2::throw_error(__FILE__, __LINE__, ::fmt::format("cuBLAS error in {}: {}", #expr, \
                                                            ::ltx2::cublas_status_string(s_))); \
  } while (0)
