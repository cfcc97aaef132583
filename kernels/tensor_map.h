// Tensor maps for Hopper's bulk tensor copies (kernels/tma.cuh): the driver's
// cuTensorMapEncodeTiled, reached through the runtime's entry-point query (no link to libcuda).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/tensor.h"

namespace ltx2::cuda {

// A 4-d map over `t`'s memory: dims and byte strides given innermost first (dims[0] has unit
// stride; strides[i] is dim i + 1's, a positive multiple of 16), boxes of `box` elements, the
// 128-byte swizzle (box[0] x element size must be 128 bytes), zeros read past the extent.
// Throws naming `what` when the driver refuses it.
CUtensorMap tensor_map_4d(const char* what, const Tensor& t, CUtensorMapDataType type,
                          const uint64_t (&dims)[4], const uint64_t (&strides)[3], const uint32_t (&box)[4]);

}  // namespace ltx2::cuda
