// The cuDNN attention engine (kernels/cudnn/attention_cudnn.cpp), built only when CMake finds
// cuDNN 9 (LTX2_WITH_CUDNN). Plain C++: no cuDNN type leaks out of its file.
#pragma once

#include "core/tensor.h"

namespace ltx2::cuda {

// out = softmax(q kᵀ · scale) v through cuDNN's fused flash attention, on the legacy default stream
// of the tensors' device, without a host synchronisation once the shape's plan exists. q [B, H, Tq,
// D], k [B, H, Tk, D], v [B, H, Tk, D], out [B, H, Tq, D], all bf16 on one GPU, D 64 or 128, read
// and written through their strides (head-dim stride 1, other strides multiples of 8 elements,
// 16-byte aligned addresses). Returns false, running nothing, for any other input or a shape for
// which cuDNN has no engine (that shape is remembered and logged once).
bool cudnn_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, float scale);

}  // namespace ltx2::cuda
